# plots/availability.gp: for a sweep, both views of unavailability per
# setting: unavailable_ms (the cluster's view: a partition had no leader able
# to serve, or refused acks=all writes) and produce_unavailable_ms (the
# clients' view: some record sent to a partition had waited longer than
# unavailable.threshold), each summed over partitions. Bars are the mean over
# seeds, whiskers the minimum and maximum.
# Data (tab separated), written by `ksim plot --kind availability`:
#   settings.dat  x <TAB> setting <TAB> runs <TAB> unavailable mean <TAB> min <TAB>
#                 max <TAB> produce_unavailable mean <TAB> min <TAB> max
# Variables: see common.gp, plus xlabel_text, count (settings), xtics_cmd (the tick
#   labels, a `set xtics (...)` command), tick_lines (lines of the tallest),
#   rotate (1: slanted labels).

load scriptdir.'/common.gp'
set xlabel xlabel_text
# The key above the plot leaves its whole width to the settings.
set key outside top center horizontal box opaque samplen 2
set ylabel 'unavailable time (ms, summed over partitions)'
set xrange [-0.6:count - 0.4]
set yrange [0:*]
set offsets 0, 0, graph 0.08, 0
set style fill solid 0.75 border -1
set boxwidth 0.36
# Tick labels come from the program (xtics_cmd): one line per varied key,
# shortened and cut so that neighbours never overlap; slanted when the
# settings are too many for even that.
eval xtics_cmd
if (rotate) {
    set xtics rotate by -30 left
    set bmargin 13
} else {
    set xtics norotate
    set xlabel xlabel_text offset 0,-(tick_lines - 1)
    set bmargin tick_lines + 4
}
set grid noxtics ytics
set pointintervalbox 0

plot datadir.'/settings.dat' using ($1 - 0.19):4 with boxes lc rgb '#9467bd' title 'unavailable_ms (cluster)', \
     datadir.'/settings.dat' using ($1 - 0.19):4:5:6 with yerrorbars pt 7 ps 0.5 lc rgb '#000000' notitle, \
     datadir.'/settings.dat' using ($1 + 0.19):7 with boxes lc rgb '#ff7f0e' title 'produce_unavailable_ms (clients)', \
     datadir.'/settings.dat' using ($1 + 0.19):7:8:9 with yerrorbars pt 7 ps 0.5 lc rgb '#000000' notitle
