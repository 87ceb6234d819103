/* HTML the pages share (html.h): text escaped, the columns' colours, the style
 * sheet, the file. */
#define _GNU_SOURCE
#include "writers/html.h"

#include <inttypes.h>

#include "writers/output.h"

#define NS_PER_MS 1e6

/* The colours (columns.def), fixed so that pages compare (docs/user-guide.md lists them). The parts
 * are told apart by hue; the band behind the frames over the budget is a pale
 * red no part uses, the budget line a strong one, and the plot's background a
 * grey-blue that is neither. */
const struct nvs_html_part nvs_html_parts[NVS_COLUMNS] = {
#define NVS_COLUMN(ID, HEADING, KEY, PHRASE, CLASS, COLOUR, LEGEND, DOMAIN, RULE)                  \
    [NVS_COLUMN_##ID] = { CLASS, COLOUR, LEGEND },
#include "model/columns.def"
#undef NVS_COLUMN
};
#define PLOT_BACKGROUND "#f3f6fa"
#define OVER_BUDGET_BAND "#ffcdd2"
#define BUDGET_LINE "#d50000"
#define HISTOGRAM_BAR "#546e7a"
#define BIN_P99 "#263238" /* a bin's p99: a dark tick across its bar */
#define BIN_MAX "#78909c" /* its slowest frame: a light one */
#define AXIS "#616161"

const char *nvs_html_column_colour(int column)
{
    return column > NVS_COLUMN_TOTAL && column < NVS_COLUMNS ? nvs_html_parts[column].colour : AXIS;
}

/* ---- text ---------------------------------------------------------------------- */

/* TEXT as HTML text or attribute value: markup characters as references,
 * control characters (no place in HTML text) as U+FFFD. */
void nvs_html_text(FILE *out, const char *text)
{
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        switch (*c) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        default:
            if ((*c < 0x20 && *c != '\t' && *c != '\n') || *c == 0x7F)
                fputs("&#xfffd;", out);
            else
                fputc(*c, out);
        }
    }
}

void nvs_html_put_ms(FILE *out, int64_t ns)
{
    fprintf(out, "%.3f", (double)ns / NS_PER_MS);
}

const char *nvs_html_plural(size_t count)
{
    return count == 1 ? "" : "s";
}

/* "process 1234 (name)", the name escaped. */
void nvs_html_put_process(FILE *out, const struct nvs_report_process *process)
{
    fprintf(out, "process %" PRIu32, process->pid);
    if (process->name) {
        fputs(" (", out);
        nvs_html_text(out, process->name);
        fputc(')', out);
    }
}

/* ---- the page's frame ------------------------------------------------------------ */

void nvs_html_style(FILE *out)
{
    fputs(
        "<style>\n"
        "body{font:14px/1.45 sans-serif;color:#212121;background:#fff;margin:16px 24px;max-width:1200px}\n"
        "h1{font-size:20px;margin:0 0 8px}h2{font-size:17px;margin:28px 0 6px;border-bottom:1px solid #ccc}\n"
        "h3{font-size:15px;margin:18px 0 4px}p{margin:4px 0}code{font-size:13px}\n"
        "table{border-collapse:collapse;margin:6px 0}th,td{padding:1px 8px;text-align:right;"
        "white-space:nowrap}\n"
        "th{border-bottom:1px solid #999;font-weight:600}td.t,th.t{text-align:left}\n"
        "tr.over td{background:" OVER_BUDGET_BAND "}tr.kind td{border-top:1px solid #e0e0e0}\n"
        ".legend{margin:4px 0;padding:0}.legend li{display:inline-block;margin:0 14px 0 0}\n"
        ".key{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-1px}\n"
        ".key.line{height:2px;vertical-align:4px}\n"
        ".note{color:#555;font-size:13px}\n"
        "svg{display:block;max-width:100%;height:auto}svg text{font:11px sans-serif;fill:#424242}\n"
        "svg rect{shape-rendering:crispEdges}\n",
        out);
    for (int c = NVS_COLUMN_USB; c < NVS_COLUMNS; c++)
        if (nvs_html_parts[c].class)
            fprintf(out, ".f-%s{fill:%s}.k-%s{background:%s}\n", nvs_html_parts[c].class,
                    nvs_html_parts[c].colour, nvs_html_parts[c].class, nvs_html_parts[c].colour);
    fputs(".f-plot{fill:" PLOT_BACKGROUND "}.f-over{fill:" OVER_BUDGET_BAND "}"
          ".f-budget{fill:" BUDGET_LINE "}.k-budget{background:" BUDGET_LINE "}"
          ".k-over{background:" OVER_BUDGET_BAND "}\n"
          ".f-hist{fill:" HISTOGRAM_BAR "}.f-axis{fill:" AXIS "}\n"
          ".f-p99{fill:" BIN_P99 "}.k-p99{background:" BIN_P99 "}.f-max{fill:" BIN_MAX "}"
          ".k-max{background:" BIN_MAX "}.f-strip{fill:" BUDGET_LINE "}\n"
          "</style>\n",
          out);
}

/* ---- the file ---------------------------------------------------------------------- */

#define PAGE "the page", ""

int nvs_html_refused(const char *command, const char *path)
{
    return nvs_output_refused(command, path, PAGE);
}

int nvs_html_write(const char *command, const char *path,
                   int (*put)(FILE *out, const void *context), const void *context)
{
    return nvs_output_write(command, path, PAGE, put, context);
}
