/*
 * plots/report.js: the script of a `ksim report` page (sim/report.c copies it
 * into the page). It draws, for each partition, every replica's log at each
 * step of the run from the JSON block #ksim-data (table replica_logs), steps
 * through them with Previous/Next, the step menu and the arrow keys, and
 * links steps and timeline lines both ways. No network, no library.
 *
 * A drawing: one row per replica, its log from the log start offset to the
 * log end offset (LEO), split into the runs of offsets written in one
 * leader epoch (coloured by epoch), the high watermark (HW) as a black bar
 * with its value above, the LEO as a triangle with its value below. Above
 * the rows, bands show which offsets producers were told were acknowledged,
 * which acknowledged ones were lost and which are duplicated in the final
 * read. The replica that truncated (or recovered) at this step shows the
 * dropped offsets hatched in red; a replica whose broker is down shows the
 * last log it was seen with, dashed. "Zoom" (on for long logs) shows the
 * offsets around the replicas' log ends, where they differ; "whole log"
 * shows everything.
 *
 * FILE.html#step-N opens the step of event N (events.event_id), #show-N
 * the same without scrolling to it. Opened as
 * FILE.html#selftest, the script clicks through its own controls
 * and writes what it found into <pre id="selftest"> (tests/report.sh reads
 * it from headless Chromium's --dump-dom).
 */
(function () {
    'use strict';
    var errors = [];
    window.addEventListener('error', function (e) {
        errors.push(String(e.message));
    });

    var SVG_NS = 'http://www.w3.org/2000/svg';
    var EPOCH_COLORS = ['#4e79a7', '#f28e2b', '#59a14f', '#b07aa1', '#e3b505',
                        '#76b7b2', '#ff9da7', '#9c755f', '#e15759', '#7f7f7f'];
    var WIDTH = 1000;
    var LABEL_W = 170;
    var RIGHT_W = 24;
    var ROW_H = 62;
    var BAND_H = 16;
    var CELL_MAX = 64; /* at most this many offsets: one cell each */

    function epochColor(epoch) {
        if (epoch === null || epoch === undefined || epoch < 0) {
            return '#c8c8c8';
        }
        return EPOCH_COLORS[epoch % EPOCH_COLORS.length];
    }

    function html(tag, attrs, text) {
        var node = document.createElement(tag);
        Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
        if (text !== undefined) {
            node.textContent = text;
        }
        return node;
    }

    function svg(tag, attrs, text) {
        var node = document.createElementNS(SVG_NS, tag);
        Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
        if (text !== undefined) {
            node.textContent = text;
        }
        return node;
    }

    function seconds(t_ns) {
        return (t_ns / 1e9).toFixed(3) + ' s';
    }

    /* Offline replicas carry the last state they were seen with (ghost). */
    function annotate(p) {
        var last = {};
        var leoMax = 1;
        var epochs = {};
        p.steps.forEach(function (step) {
            step.replicas.forEach(function (r) {
                if (r.leo === null) {
                    r.ghost = last[r.broker] || null;
                } else {
                    last[r.broker] = r;
                    leoMax = Math.max(leoMax, r.leo);
                    (r.epochs || []).forEach(function (e) { epochs[e[0]] = true; });
                }
            });
        });
        p.leoMax = leoMax;
        p.epochList = Object.keys(epochs).map(Number).sort(function (a, b) { return a - b; });
    }

    function removes(step) {
        return step.from !== null && step.to !== null &&
               (step.kind === 'truncation' || step.kind === 'recovery' ||
                step.kind === 'retention');
    }

    /* The offsets to show: everything, or around where the logs end. */
    function window_of(p, step, zoom) {
        if (!zoom) {
            return [0, p.leoMax];
        }
        var points = [];
        step.replicas.forEach(function (r) {
            var s = r.leo !== null ? r : r.ghost;
            if (s) {
                points.push(s.leo, s.hw);
            }
        });
        if (removes(step)) {
            points.push(step.from, step.to);
        }
        if (points.length === 0) {
            return [0, p.leoMax];
        }
        var lo = Math.min.apply(null, points);
        var hi = Math.max.apply(null, points);
        var pad = Math.max(4, Math.round(Math.max(hi - lo, 12) * 0.3));
        lo = Math.max(0, lo - pad);
        hi = Math.min(Math.max(hi + pad, lo + 16), Math.max(p.leoMax, hi));
        return [lo, hi];
    }

    function niceStep(span) {
        var raw = span / 8;
        var power = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1))));
        var steps = [1, 2, 5, 10];
        for (var i = 0; i < steps.length; i++) {
            if (steps[i] * power >= raw) {
                return Math.max(1, steps[i] * power);
            }
        }
        return 10 * power;
    }

    function defs(root) {
        var d = svg('defs');
        var hatch = svg('pattern', { id: 'hatch-dropped', width: 6, height: 6,
                                     patternUnits: 'userSpaceOnUse',
                                     patternTransform: 'rotate(45)' });
        hatch.appendChild(svg('rect', { width: 6, height: 6, fill: '#fde0dd' }));
        hatch.appendChild(svg('line', { x1: 0, y1: 0, x2: 0, y2: 6, stroke: '#d62728',
                                        'stroke-width': 2.5 }));
        d.appendChild(hatch);
        root.appendChild(d);
    }

    /* The bands above the rows: acked, lost, duplicated offsets. */
    function drawBands(g, p, x, lo, hi, y) {
        var bands = [['acked', 'acknowledged', '#9fd39a'], ['lost', 'lost (acked, missing)',
                     '#d62728'], ['duplicated', 'duplicated', '#9467bd']];
        bands.forEach(function (band) {
            var ranges = p[band[0]] || [];
            if (ranges.length === 0) {
                return;
            }
            g.appendChild(svg('text', { x: LABEL_W - 8, y: y + BAND_H - 4, 'class': 'band-label',
                                        'text-anchor': 'end' }, band[1]));
            g.appendChild(svg('rect', { x: x(lo), y: y + 3, width: x(hi) - x(lo),
                                        height: BAND_H - 6, fill: '#f3f3f3' }));
            ranges.forEach(function (r) {
                var a = Math.max(r[0], lo);
                var b = Math.min(r[1] + 1, hi);
                if (b <= a) {
                    return;
                }
                var rect = svg('rect', { x: x(a), y: y + 3, width: Math.max(1.5, x(b) - x(a)),
                                         height: BAND_H - 6, fill: band[2],
                                         'class': 'band band-' + band[0] });
                rect.appendChild(svg('title', {}, band[1] + ': offsets ' + r[0] + '..' + r[1] +
                                     (r[2] ? ' (' + r[2] + ' records' +
                                      (r[3] ? '; cause: ' + r[3] : '') + ')' : '')));
                g.appendChild(rect);
            });
            y += BAND_H;
        });
        return y;
    }

    function roleText(step, r) {
        if (r.state === 'offline') {
            return 'broker down';
        }
        if (r.leo === null) {
            return 'no replica yet';
        }
        var inIsr = step.isr.indexOf(r.broker) >= 0;
        return r.state + (inIsr ? ' \u00b7 in ISR' : ' \u00b7 not in ISR');
    }

    function drawSegments(g, r, x, lo, hi, top, height) {
        var entries = r.epochs || [];
        var start = r.start === null ? 0 : r.start;
        if (entries.length === 0 && r.leo > start) {
            entries = [[-1, start]];
        }
        entries.forEach(function (entry, i) {
            var a = Math.max(entry[1], start, lo);
            var next = i + 1 < entries.length ? entries[i + 1][1] : r.leo;
            var b = Math.min(next, r.leo, hi);
            if (b <= a) {
                return;
            }
            var rect = svg('rect', { x: x(a), y: top, width: Math.max(1, x(b) - x(a)),
                                     height: height, fill: epochColor(entry[0]),
                                     'class': 'segment' });
            rect.appendChild(svg('title', {}, 'offsets ' + Math.max(entry[1], start) + '..' +
                                 (next - 1) + ' written in leader epoch ' + entry[0]));
            g.appendChild(rect);
            if (x(b) - x(a) > 34) {
                g.appendChild(svg('text', { x: (x(a) + x(b)) / 2, y: top + height / 2 + 4,
                                            'class': 'epoch-label', 'text-anchor': 'middle' },
                                  'epoch ' + entry[0]));
            }
        });
        if (hi - lo <= CELL_MAX) {
            for (var o = Math.ceil(lo) + 1; o < Math.min(r.leo, hi); o++) {
                if (o > start) {
                    g.appendChild(svg('line', { x1: x(o), y1: top, x2: x(o), y2: top + height,
                                                stroke: '#ffffff', 'stroke-width': 1 }));
                }
            }
        }
    }

    function drawMarkers(g, r, x, lo, hi, top, height) {
        if (r.hw !== null && r.hw >= lo && r.hw <= hi) {
            g.appendChild(svg('rect', { x: x(r.hw) - 1.5, y: top - 5, width: 3,
                                        height: height + 10, fill: '#111', 'class': 'hw' }));
            g.appendChild(svg('text', { x: x(r.hw), y: top - 8, 'class': 'mark-label',
                                        'text-anchor': 'middle' }, 'HW ' + r.hw));
        }
        if (r.leo !== null && r.leo >= lo && r.leo <= hi) {
            var lx = x(r.leo);
            var y = top + height + 2;
            g.appendChild(svg('path', { d: 'M' + lx + ' ' + y + ' l-5 8 l10 0 z', fill: '#111',
                                        'class': 'leo' }));
            g.appendChild(svg('text', { x: lx, y: y + 19, 'class': 'mark-label',
                                        'text-anchor': 'middle' }, 'LEO ' + r.leo));
        }
    }

    function drawDropped(g, step, x, lo, hi, top, height) {
        var a = Math.max(step.from, lo);
        var b = Math.min(step.to, hi);
        if (b <= a) {
            return;
        }
        var rect = svg('rect', { x: x(a), y: top, width: Math.max(2, x(b) - x(a)),
                                 height: height, fill: 'url(#hatch-dropped)', stroke: '#d62728',
                                 'stroke-dasharray': '4 2', 'stroke-width': 1.5,
                                 'class': 'dropped' });
        var what = step.kind === 'retention' ? 'deleted by retention' : 'dropped';
        rect.appendChild(svg('title', {}, what + ': offsets ' + step.from + '..' +
                             (step.to - 1)));
        g.appendChild(rect);
        var label = what + ' ' + step.from + '..' + (step.to - 1);
        var cx = (x(a) + x(b)) / 2;
        g.appendChild(svg('text', { x: cx, y: top + height / 2 + 4, 'class': 'dropped-label',
                                    'text-anchor': 'middle' }, label));
    }

    function drawGhost(g, ghost, x, lo, hi, top, height) {
        var a = Math.max(ghost.start || 0, lo);
        var b = Math.min(ghost.leo, hi);
        if (b > a) {
            g.appendChild(svg('rect', { x: x(a), y: top, width: x(b) - x(a), height: height,
                                        fill: 'none', stroke: '#8a8a8a',
                                        'stroke-dasharray': '5 3', 'class': 'ghost' }));
        }
        g.appendChild(svg('text', { x: (x(lo) + x(hi)) / 2, y: top + height / 2 + 4,
                                    'class': 'down-label', 'text-anchor': 'middle' },
                          'down \u2014 last seen with LEO ' + ghost.leo + ', HW ' + ghost.hw));
    }

    function drawReplica(g, step, r, x, lo, hi, y) {
        var row = svg('g', { 'class': 'replica', 'data-broker': r.broker });
        var top = y + 18;
        var height = 22;
        var leader = step.leader === r.broker;
        row.appendChild(svg('text', { x: 8, y: top + 9, 'class': 'replica-name' },
                            (leader ? '\u2605 ' : '') + 'broker ' + r.broker));
        row.appendChild(svg('text', { x: 8, y: top + 25, 'class': 'replica-role' },
                            roleText(step, r)));
        row.appendChild(svg('rect', { x: x(lo), y: top, width: x(hi) - x(lo), height: height,
                                      fill: r.state === 'offline' ? '#fafafa' : '#eeeeee',
                                      'class': 'track' }));
        if (r.leo !== null) {
            drawSegments(row, r, x, lo, hi, top, height);
            if (removes(step) && step.broker === r.broker) {
                drawDropped(row, step, x, lo, hi, top, height);
            }
            drawMarkers(row, r, x, lo, hi, top, height);
        } else if (r.ghost) {
            drawGhost(row, r.ghost, x, lo, hi, top, height);
        } else {
            row.appendChild(svg('text', { x: (x(lo) + x(hi)) / 2, y: top + height / 2 + 4,
                                          'class': 'down-label', 'text-anchor': 'middle' },
                                r.state === 'offline' ? 'down' : 'no replica yet'));
        }
        g.appendChild(row);
    }

    function drawAxis(g, x, lo, hi, y) {
        g.appendChild(svg('line', { x1: x(lo), y1: y, x2: x(hi), y2: y, stroke: '#555' }));
        var step = hi - lo <= 32 ? 1 : niceStep(hi - lo);
        for (var o = Math.ceil(lo / step) * step; o <= hi; o += step) {
            g.appendChild(svg('line', { x1: x(o), y1: y, x2: x(o), y2: y + 5, stroke: '#555' }));
            g.appendChild(svg('text', { x: x(o), y: y + 17, 'class': 'tick',
                                        'text-anchor': 'middle' }, String(o)));
        }
        g.appendChild(svg('text', { x: LABEL_W - 8, y: y + 17, 'class': 'band-label',
                                    'text-anchor': 'end' }, 'offset'));
        return y + 26;
    }

    function draw(view) {
        var p = view.p;
        var step = p.steps[view.index];
        var w = window_of(p, step, view.zoom.checked);
        var lo = w[0];
        var hi = Math.max(w[1], lo + 1);
        var x = function (o) { return LABEL_W + (o - lo) / (hi - lo) * (WIDTH - LABEL_W - RIGHT_W); };
        var root = view.svg;
        while (root.firstChild) {
            root.removeChild(root.firstChild);
        }
        defs(root);
        var g = svg('g');
        var y = drawBands(g, p, x, lo, hi, 6);
        step.replicas.forEach(function (r) {
            drawReplica(g, step, r, x, lo, hi, y);
            y += ROW_H;
        });
        y = drawAxis(g, x, lo, hi, y + 4);
        root.appendChild(g);
        root.setAttribute('viewBox', '0 0 ' + WIDTH + ' ' + y);
        root.setAttribute('data-step', String(view.index));
        view.header.textContent = 'Step ' + (view.index + 1) + ' of ' + p.steps.length +
                                  ' \u00b7 ' + seconds(step.t_ns) + ' \u00b7 ' + step.kind;
        view.detail.textContent = step.detail;
        view.select.value = String(view.index);
        view.prev.disabled = view.index === 0;
        view.next.disabled = view.index === p.steps.length - 1;
        view.where.textContent = 'offsets ' + lo + '..' + Math.round(hi) +
                                 (view.zoom.checked ? ' (zoomed)' : ' (whole log)');
        markTimeline(view, step.event);
    }

    function markTimeline(view, event) {
        var old = document.querySelectorAll('tr.ev.current-' + view.id);
        Array.prototype.forEach.call(old, function (row) {
            row.classList.remove('current', 'current-' + view.id);
        });
        var row = document.getElementById('ev-' + event);
        if (row) {
            row.classList.add('current', 'current-' + view.id);
        }
    }

    function go(view, index) {
        view.index = Math.max(0, Math.min(view.p.steps.length - 1, index));
        active = view;
        draw(view);
    }

    function legend(p) {
        var box = html('div', { 'class': 'legend' });
        p.epochList.forEach(function (e) {
            var item = html('span', { 'class': 'item' });
            var swatch = html('span', { 'class': 'swatch' });
            swatch.style.background = epochColor(e);
            item.appendChild(swatch);
            item.appendChild(document.createTextNode('leader epoch ' + e));
            box.appendChild(item);
        });
        [['hw', 'HW (high watermark)'], ['leo', 'LEO (log end offset)'],
         ['dropped', 'truncated at this step'], ['ghost', 'broker down: last log seen'],
         ['star', '\u2605 the controller\u2019s leader']].forEach(function (k) {
            var item = html('span', { 'class': 'item' });
            item.appendChild(html('span', { 'class': 'swatch swatch-' + k[0] }));
            item.appendChild(document.createTextNode(k[1]));
            box.appendChild(item);
        });
        return box;
    }

    function stepLabel(step) {
        var who = step.broker !== null ? ' broker ' + step.broker : '';
        return seconds(step.t_ns) + ' ' + step.kind + who;
    }

    function build(p, id) {
        annotate(p);
        var section = html('section', { 'class': 'partition', id: 'p-' + p.name });
        section.appendChild(html('h3', {}, 'Partition ' + p.name));
        var bar = html('div', { 'class': 'stepper' });
        var view = { p: p, id: id, index: 0, section: section };
        view.first = html('button', { type: 'button', 'class': 'first', title: 'first step' },
                          '\u00ab');
        view.prev = html('button', { type: 'button', 'class': 'prev' }, '\u2039 Previous');
        view.next = html('button', { type: 'button', 'class': 'next' }, 'Next \u203a');
        view.last = html('button', { type: 'button', 'class': 'last', title: 'last step' },
                         '\u00bb');
        view.select = html('select', { 'class': 'steps', 'aria-label': 'step' });
        p.steps.forEach(function (step, i) {
            view.select.appendChild(html('option', { value: String(i) },
                                         (i + 1) + '. ' + stepLabel(step)));
        });
        var zoomLabel = html('label', { 'class': 'toggle' });
        view.zoom = html('input', { type: 'checkbox', 'class': 'zoom' });
        view.zoom.checked = p.leoMax > CELL_MAX;
        zoomLabel.appendChild(view.zoom);
        zoomLabel.appendChild(document.createTextNode(' zoom to the log ends'));
        [view.first, view.prev, view.next, view.last, view.select, zoomLabel].forEach(
            function (n) { bar.appendChild(n); });
        section.appendChild(bar);
        view.header = html('div', { 'class': 'step-header' });
        var detailLine = html('div', { 'class': 'step-detail' });
        view.detail = html('span');
        var toTimeline = html('a', { href: '#', 'class': 'to-timeline' }, 'in the timeline \u2193');
        detailLine.appendChild(view.detail);
        detailLine.appendChild(document.createTextNode(' '));
        detailLine.appendChild(toTimeline);
        section.appendChild(view.header);
        section.appendChild(detailLine);
        view.svg = svg('svg', { 'class': 'replica-log', role: 'img',
                                'aria-label': 'replica logs of ' + p.name });
        section.appendChild(view.svg);
        view.where = html('div', { 'class': 'window' });
        section.appendChild(view.where);
        section.appendChild(legend(p));
        view.first.addEventListener('click', function () { go(view, 0); });
        view.prev.addEventListener('click', function () { go(view, view.index - 1); });
        view.next.addEventListener('click', function () { go(view, view.index + 1); });
        view.last.addEventListener('click', function () { go(view, p.steps.length - 1); });
        view.select.addEventListener('change', function () { go(view, Number(view.select.value)); });
        view.zoom.addEventListener('change', function () { draw(view); });
        section.addEventListener('click', function () { active = view; });
        toTimeline.addEventListener('click', function (e) {
            e.preventDefault();
            var row = document.getElementById('ev-' + p.steps[view.index].event);
            if (row) {
                row.scrollIntoView({ block: 'center' });
                row.classList.add('flash');
                setTimeout(function () { row.classList.remove('flash'); }, 1200);
            }
        });
        return view;
    }

    /* Timeline lines whose event is a step get a "logs" button. */
    function linkTimeline(views) {
        var byEvent = {};
        views.forEach(function (view) {
            view.p.steps.forEach(function (step, i) {
                (byEvent[step.event] = byEvent[step.event] || []).push([view, i]);
            });
        });
        Object.keys(byEvent).forEach(function (event) {
            var row = document.getElementById('ev-' + event);
            if (!row) {
                return;
            }
            var cell = row.querySelector('td.go');
            byEvent[event].slice(0, 3).forEach(function (target) {
                var button = html('button', { type: 'button', 'class': 'logs',
                                              title: 'the logs of ' + target[0].p.name +
                                                     ' at this step' },
                                  byEvent[event].length > 1 ? 'logs ' + target[0].p.name
                                                            : 'logs');
                button.addEventListener('click', function () {
                    go(target[0], target[1]);
                    target[0].section.scrollIntoView({ block: 'start' });
                });
                cell.appendChild(button);
            });
        });
    }

    var active = null;
    var views = [];
    var dataNode = document.getElementById('ksim-data');
    var host = document.getElementById('partitions');
    var data = dataNode ? JSON.parse(dataNode.textContent) : { partitions: [] };
    if (host) {
        data.partitions.forEach(function (p, i) {
            if (p.steps.length === 0) {
                return;
            }
            var view = build(p, i);
            host.appendChild(view.section);
            views.push(view);
            /* Start where the logs hold something (topic creation comes
             * before any replica exists). */
            var first = p.steps.findIndex(function (step) {
                return step.replicas.some(function (r) { return r.leo !== null && r.leo > 0; });
            });
            go(view, first >= 0 ? first : 0);
        });
        linkTimeline(views);
        active = views[0] || null;
    }
    document.addEventListener('keydown', function (e) {
        if (!active || e.target.tagName === 'SELECT' || e.target.tagName === 'INPUT') {
            return;
        }
        if (e.key === 'ArrowRight') {
            go(active, active.index + 1);
            e.preventDefault();
        } else if (e.key === 'ArrowLeft') {
            go(active, active.index - 1);
            e.preventDefault();
        }
    });
    var explain = document.getElementById('show-explain');
    if (explain) {
        explain.addEventListener('change', function () {
            document.body.classList.toggle('no-explain', !explain.checked);
        });
    }

    /* #selftest: click through the controls and report what the page shows. */
    function selftest() {
        var out = [];
        var drawings = document.querySelectorAll('svg.replica-log');
        out.push('drawings=' + drawings.length);
        out.push('replica_rows=' + document.querySelectorAll('svg.replica-log g.replica').length);
        out.push('segments=' + document.querySelectorAll('svg.replica-log rect.segment').length);
        out.push('hw_marks=' + document.querySelectorAll('svg.replica-log rect.hw').length);
        var view = views.filter(function (v) { return v.p.steps.length > 1; })[0];
        if (view) {
            go(view, 0);
            var before = view.header.textContent;
            view.next.click();
            var moved = view.index === 1 && view.svg.getAttribute('data-step') === '1' &&
                        view.header.textContent !== before;
            out.push('next=' + (moved ? 'ok' : 'FAIL'));
            view.prev.click();
            out.push('prev=' + (view.index === 0 &&
                                view.svg.getAttribute('data-step') === '0' ? 'ok' : 'FAIL'));
            var current = document.querySelector('tr.ev.current');
            out.push('timeline_marked=' + (current &&
                     current.id === 'ev-' + view.p.steps[0].event ? 'ok' : 'FAIL'));
            var buttons = document.querySelectorAll('tr.ev button.logs');
            out.push('timeline_links=' + buttons.length);
            var lastButton = buttons[buttons.length - 1];
            if (lastButton) {
                var row = lastButton.closest('tr');
                lastButton.click();
                var shown = views.some(function (v) {
                    return String(v.p.steps[v.index].event) === row.getAttribute('data-event');
                });
                out.push('timeline_click=' + (shown ? 'ok' : 'FAIL'));
            }
            var dropped = 0;
            views.forEach(function (v) {
                for (var i = 0; i < v.p.steps.length; i++) {
                    go(v, i);
                    dropped += v.svg.querySelectorAll('rect.dropped').length;
                }
                go(v, 0);
            });
            out.push('dropped_drawn=' + dropped);
        } else {
            out.push('next=skipped');
        }
        out.push('lost_bands=' + document.querySelectorAll('rect.band-lost').length);
        out.push('plots=' + document.querySelectorAll('#plots img').length);
        out.push('errors=' + errors.length + (errors.length ? ' ' + errors.join(' | ') : ''));
        var node = document.getElementById('selftest');
        node.textContent = out.join('\n');
        node.hidden = false;
    }
    /* #step-N opens the step of event N (events.event_id) and scrolls to
     * it; #show-N only opens it (for screenshots of the whole page). */
    var wanted = /^#(step|show)-(\d+)$/.exec(location.hash);
    if (wanted) {
        views.some(function (view) {
            var i = view.p.steps.findIndex(function (step) {
                return String(step.event) === wanted[2];
            });
            if (i >= 0) {
                go(view, i);
                if (wanted[1] === 'step') {
                    view.section.scrollIntoView({ block: 'start' });
                }
            }
            return i >= 0;
        });
    }
    if (location.hash === '#selftest') {
        try {
            selftest();
        } catch (e) {
            errors.push(String(e));
            document.getElementById('selftest').textContent = 'errors=' + errors.join(' | ');
        }
    }
}());
