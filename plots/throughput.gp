# plots/throughput.gp: acknowledged records per simulated second over time,
# with fault windows shaded and named.
# Data (tab separated), written by `ksim plot --kind throughput`:
#   throughput.dat  t_s <TAB> acked records per second in the bin starting at t_s
#   faults.dat      start_s <TAB> end_s <TAB> label <TAB> label height (0..1) <TAB> label x
# Variables: see common.gp, plus bin_text ('1 s', '200 ms'), xmax, has_faults.

load scriptdir.'/common.gp'
set xlabel 'simulated time (s)'
set ylabel sprintf('acked records per second (bins of %s)', bin_text)
set xrange [xmin:xmax]
set yrange [0:*]
set y2range [0:1]
unset y2tics
set style fill solid 0.18 noborder

# An empty faults.dat only makes gnuplot warn; its key entry is then left out.
plot datadir.'/faults.dat' using (($1 + $2) / 2):(0.5):(($2 - $1) / 2):(0.5) axes x1y2 \
         with boxxyerror lc rgb '#d62728' fs solid 0.15 noborder \
         title (has_faults ? 'fault window' : ''), \
     datadir.'/faults.dat' using 5:4:3 axes x1y2 with labels left offset 0.3,0 \
         tc rgb '#8b0000' font ',9' notitle, \
     datadir.'/throughput.dat' using 1:2 with steps lw 2 lc rgb '#1f77b4' title 'acked/s'
