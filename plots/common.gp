# plots/common.gp: what every ksim plot shares, loaded first by each script.
# `ksim plot` sets these variables with -e before the script runs:
#   term      'png' (pngcairo) or 'svg'
#   outfile   the image to write
#   datadir   the folder with the data files the program wrote from SQLite
#   title_text  the plot's title (scenario, --set overrides, seed, run id)
#   xmin, xmax  (per-run plots) the time axis; xmin defaults to 0 (--from/--to zoom)
#   zoomed      1 when --from/--to zoom in (the y axis then fits what is shown)

if (term eq 'svg') {
    set terminal svg size 1100,620 dynamic noenhanced font 'Sans,12' background rgb 'white'
} else {
    set terminal pngcairo size 1100,620 noenhanced font 'Sans,11' background rgb 'white'
}
set output outfile
set title title_text font ',14'
set grid xtics ytics lc rgb '#dddddd' lt 1
set border 3
set tics nomirror
set key outside right top vertical box opaque samplen 2 spacing 1.1
set datafile separator '\t'
set datafile missing 'NaN'
if (!exists('xmin')) xmin = 0
if (!exists('zoomed')) zoomed = 0
