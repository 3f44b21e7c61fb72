# plots/latency.gp: produce latency (send to acknowledgement) percentiles per
# time bin, by the time the acknowledgement arrived, with fault windows shaded.
# Data (tab separated), written by `ksim plot --kind latency`:
#   latency.dat  t_s <TAB> p50_ms <TAB> p99_ms <TAB> acked records in the bin
#   faults.dat   start_s <TAB> end_s <TAB> label <TAB> label height (0..1) <TAB> label x
# Variables: see common.gp, plus bin_text, xmax, has_faults, logscale (0/1).

load scriptdir.'/common.gp'
set xlabel 'simulated time of the acknowledgement (s)'
set ylabel sprintf('produce latency (ms, per %s bin)', bin_text)
set xrange [xmin:xmax]
if (logscale) {
    set logscale y 10
    set yrange [*:*]
} else {
    set yrange [0:*]
}
set y2range [0:1]
unset y2tics

# An empty faults.dat only makes gnuplot warn; its key entry is then left out.
plot datadir.'/faults.dat' using (($1 + $2) / 2):(0.5):(($2 - $1) / 2):(0.5) axes x1y2 \
         with boxxyerror lc rgb '#d62728' fs solid 0.15 noborder \
         title (has_faults ? 'fault window' : ''), \
     datadir.'/faults.dat' using 5:4:3 axes x1y2 with labels left offset 0.3,0 \
         tc rgb '#8b0000' font ',9' notitle, \
     datadir.'/latency.dat' using 1:2 with linespoints pt 7 ps 0.4 lw 2 lc rgb '#1f77b4' title 'p50', \
     datadir.'/latency.dat' using 1:3 with linespoints pt 5 ps 0.4 lw 2 lc rgb '#ff7f0e' title 'p99'
