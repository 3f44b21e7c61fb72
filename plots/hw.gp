# plots/hw.gp: log end offset (LEO, solid) and high watermark (HW, dashed) of
# every replica of one partition over time, with leader elections marked.
# Data (tab separated), written by `ksim plot --kind hw`:
#   hw.dat         one block per broker (blocks separated by two blank lines):
#                  t_s <TAB> LEO <TAB> HW   (NaN while the broker is down)
#   elections.dat  t_s <TAB> label <TAB> label height (0..1)
#   faults.dat     start_s <TAB> end_s <TAB> label <TAB> label height (0..1) <TAB> label x
# Variables: see common.gp, plus xmax, series, brokers (ids separated by
#   spaces), has_elections, has_faults.

load scriptdir.'/common.gp'
# Replicas in sync draw the same line: each broker's line is thinner than the
# one before it, so a line on top leaves the ones below showing at its edges,
# and each carries its own marker every few samples (offset per broker).
width(i) = 1.5 + 2.0 * (series - i)
marks = 12
set xlabel 'simulated time (s)'
set ylabel 'offset (records)'
set xrange [xmin:xmax]
if (zoomed) { set yrange [*:*] } else { set yrange [0:*] }
set y2range [0:1]
unset y2tics

# Empty faults.dat or elections.dat only make gnuplot warn; their key entries
# are then left out.
plot datadir.'/faults.dat' using (($1 + $2) / 2):(0.5):(($2 - $1) / 2):(0.5) axes x1y2 \
         with boxxyerror lc rgb '#d62728' fs solid 0.15 noborder \
         title (has_faults ? 'fault window' : ''), \
     datadir.'/faults.dat' using 5:4:3 axes x1y2 with labels left offset 0.3,0 \
         tc rgb '#8b0000' font ',9' notitle, \
     for [i=1:series] datadir.'/hw.dat' index (i - 1) using 1:2 with steps \
         lw width(i) lc i title sprintf('broker %s LEO', word(brokers, i)), \
     for [i=1:series] datadir.'/hw.dat' index (i - 1) using 1:3 with steps \
         lw width(i) dt 2 lc i title sprintf('broker %s HW', word(brokers, i)), \
     for [i=1:series] datadir.'/hw.dat' index (i - 1) every marks::(3 * i) using 1:2 \
         with points pt (4 + 2 * i) ps 1.2 lc i notitle, \
     datadir.'/elections.dat' using 1:(1) axes x1y2 with impulses lw 1 dt 3 \
         lc rgb '#555555' title (has_elections ? 'leader election' : ''), \
     datadir.'/elections.dat' using 1:3:2 axes x1y2 with labels right offset -0.3,0 \
         font ',9' tc rgb '#333333' notitle
