# plots/availability.gp: for a sweep, both views of unavailability per
# setting: unavailable_ms (the cluster's view: a partition had no leader able
# to serve, or refused acks=all writes) and produce_unavailable_ms (the
# clients' view: some record sent to a partition had waited longer than
# unavailable.threshold), each summed over partitions. Bars are the mean over
# seeds, whiskers the minimum and maximum.
# Data (tab separated), written by `ksim plot --kind availability`:
#   settings.dat  x <TAB> setting <TAB> runs <TAB> unavailable mean <TAB> min <TAB>
#                 max <TAB> produce_unavailable mean <TAB> min <TAB> max
# Variables: see common.gp, plus xlabel_text, count (settings), rotate (1: slanted labels).

load scriptdir.'/common.gp'
set xlabel xlabel_text
set ylabel 'unavailable time (ms, summed over partitions)'
set xrange [-0.6:count - 0.4]
set yrange [0:*]
set offsets 0, 0, graph 0.08, 0
set style fill solid 0.75 border -1
set boxwidth 0.36
if (rotate) {
    set xtics rotate by -30 left
} else {
    set xtics norotate
}
set grid noxtics ytics
set pointintervalbox 0

plot datadir.'/settings.dat' using ($1 - 0.19):4:xtic(2) with boxes lc rgb '#9467bd' title 'unavailable_ms (cluster)', \
     datadir.'/settings.dat' using ($1 - 0.19):4:5:6 with yerrorbars pt 7 ps 0.5 lc rgb '#000000' notitle, \
     datadir.'/settings.dat' using ($1 + 0.19):7 with boxes lc rgb '#ff7f0e' title 'produce_unavailable_ms (clients)', \
     datadir.'/settings.dat' using ($1 + 0.19):7:8:9 with yerrorbars pt 7 ps 0.5 lc rgb '#000000' notitle
