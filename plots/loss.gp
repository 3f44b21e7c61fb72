# plots/loss.gp: for a sweep, acknowledged records lost and duplicated per
# setting: bars are the mean over seeds, whiskers the minimum and maximum.
# Data (tab separated), written by `ksim plot --kind loss`:
#   settings.dat  x <TAB> setting <TAB> runs <TAB> lost mean <TAB> lost min <TAB>
#                 lost max <TAB> duplicates mean <TAB> min <TAB> max
# Variables: see common.gp, plus xlabel_text, count (settings), xtics_cmd (the tick
#   labels, a `set xtics (...)` command), tick_lines (lines of the tallest),
#   rotate (1: slanted labels).

load scriptdir.'/common.gp'
set xlabel xlabel_text
# The key above the plot leaves its whole width to the settings.
set key outside top center horizontal box opaque samplen 2
set ylabel 'records'
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

plot datadir.'/settings.dat' using ($1 - 0.19):4 with boxes lc rgb '#d62728' title 'acked_lost', \
     datadir.'/settings.dat' using ($1 - 0.19):4:5:6 with yerrorbars pt 7 ps 0.5 lc rgb '#000000' notitle, \
     datadir.'/settings.dat' using ($1 + 0.19):7 with boxes lc rgb '#1f77b4' title 'duplicates', \
     datadir.'/settings.dat' using ($1 + 0.19):7:8:9 with yerrorbars pt 7 ps 0.5 lc rgb '#000000' notitle
