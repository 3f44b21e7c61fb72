# plots/isr.gp: ISR size of each partition over time, as the controller
# records it, with fault windows shaded.
# Data (tab separated), written by `ksim plot --kind isr`:
#   isr.dat     one block per partition (blocks separated by two blank lines):
#               t_s <TAB> ISR size <TAB> ISR size + a small per-partition offset
#   faults.dat  start_s <TAB> end_s <TAB> label <TAB> label height (0..1) <TAB> label x
# Variables: see common.gp, plus xmax, ymax (replication factor), has_faults,
#   series (how many blocks), names (partition names separated by spaces),
#   shifted (1 when lines are offset so that equal sizes stay visible).

load scriptdir.'/common.gp'
set xlabel 'simulated time (s)'
if (shifted) {
    set ylabel 'ISR size (replicas; lines offset slightly to stay visible)'
} else {
    set ylabel 'ISR size (replicas)'
}
set xrange [xmin:xmax]
set yrange [0:ymax + 0.6]
set ytics 0,1,ymax
set mytics 1
set y2range [0:1]
unset y2tics
# Many partitions: the legend would not fit; the title counts them instead.
if (series > 14) {
    set key off
    set title sprintf('%s (%d partitions)', title_text, series) font ',14'
}

# An empty faults.dat only makes gnuplot warn; its key entry is then left out.
plot datadir.'/faults.dat' using (($1 + $2) / 2):(0.5):(($2 - $1) / 2):(0.5) axes x1y2 \
         with boxxyerror lc rgb '#d62728' fs solid 0.15 noborder \
         title (has_faults ? 'fault window' : ''), \
     datadir.'/faults.dat' using 5:4:3 axes x1y2 with labels left offset 0.3,0 \
         tc rgb '#8b0000' font ',9' notitle, \
     for [i=1:series] datadir.'/isr.dat' index (i - 1) using 1:3 with steps lw 2 lc i \
         title word(names, i)
