/* The figures' shared constants (figures.h): what the text summary
 * (report.c) and the page (report_html.c) both name. */
#include "figures.h"

const char *const nvs_report_column_names[NVS_COLUMNS] = {
    "total", "usb", "cuda", "gpu wait", "launch", "x11", "camera", "serial", "hid", "rest",
    "runnable", "blocked", "latency"};
