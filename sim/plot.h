/*
** sim/plot.h: helpers of `ksim plot` (sim/plot.c) that others may reuse.
*/
#pragma once

/* The folder holding the gnuplot scripts: $KSIM_PLOT_DIR, else ../plots next
 * to the executable when it holds common.gp, else "plots". Owned: g_free. */
char *ks_plot_script_dir(void);
