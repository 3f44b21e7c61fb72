# plots/mirror-lag.gp: each MirrorMaker 2 mirror's lag over time: over the
# source topic's partitions, the source leader's high watermark minus the
# next offset whose copy the target has not acknowledged (mirror_lag,
# docs/metrics.md), with fault windows (a cut link, a lost cluster) shaded.
# Data (tab separated), written by `ksim plot --kind mirror-lag`:
#   mirror-lag.dat  one block per mirror (blocks separated by two blank lines):
#                   t_s <TAB> lag (records)
#   faults.dat      start_s <TAB> end_s <TAB> label <TAB> label height (0..1) <TAB> label x
# Variables: see common.gp, plus xmax, series, mirrors (names separated by
#   spaces), has_faults.

load scriptdir.'/common.gp'
set xlabel 'simulated time (s)'
set ylabel 'mirror lag (records)'
set xrange [xmin:xmax]
set yrange [0:*]
set y2range [0:1]
unset y2tics

# An empty faults.dat only makes gnuplot warn; its key entry is then left out.
plot datadir.'/faults.dat' using (($1 + $2) / 2):(0.5):(($2 - $1) / 2):(0.5) axes x1y2 \
         with boxxyerror lc rgb '#d62728' fs solid 0.15 noborder \
         title (has_faults ? 'fault window' : ''), \
     datadir.'/faults.dat' using 5:4:3 axes x1y2 with labels left offset 0.3,0 \
         tc rgb '#8b0000' font ',9' notitle, \
     for [i=1:series] datadir.'/mirror-lag.dat' index (i - 1) using 1:2 with steps \
         lw 2 lc i title sprintf('mirror %s', word(mirrors, i))
