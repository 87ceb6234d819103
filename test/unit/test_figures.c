/* The figures builder (cli/model/figures_builder.c) at its limits, built here with small ones
 * so that a few thousand events pass them: the durations a name keeps exactly
 * give way to a sketch whose p50 and p99 stay within NVS_SKETCH_ERROR of the
 * nearest-rank values (worked out here by sorting), said as estimated; a
 * frame's calls are exact while its frame is open, and a call that comes after
 * its frame was closed is counted as late and makes the breakdown an
 * estimate; marks past the texts told apart are counted. Run by
 * test/test_figures.py. */
#define EXACT_VALUES_MAX ((size_t)1000)
#define HELD_INTERVALS_MAX ((size_t)64)
#define OPEN_FRAMES_MAX ((size_t)16)
#define MARK_TEXTS_MAX 8
#include "../../cli/model/figures_builder.c"

#include <math.h>

#include "check.h"

static struct nvs_events events;

static const char *intern(const char *text)
{
    return nvs_events_intern_string(&events, text);
}

static struct nvs_event range(const char *domain, const char *name, int64_t start, int64_t end)
{
    return (struct nvs_event){.start = start, .end = end, .domain = intern(domain), .name = intern(name),
                              .pid = 7, .tid = 7, .kind = NVS_EVENT_RANGE};
}

static int compare(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static const struct nvs_report_name *row_of(const struct nvs_report *report, const char *name)
{
    for (size_t i = 0; i < report->name_count; i++)
        if (strcmp(report->names[i].name, name) == 0)
            return &report->names[i];
    return NULL;
}

/* 5,000 durations of one name spread over six decades, 10 of another: the
 * first is sketched (past 1,000 exact), the second stays exact. */
static void test_a_sketch_within_its_error(void)
{
    struct nvs_figures_builder *builder = nvs_figures_begin(&events, 0);
    enum { MANY = 5000 };
    static int64_t durations[MANY];
    uint64_t seed = 12345;
    int refused = 0;
    for (size_t i = 0; i < MANY; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        durations[i] = (int64_t)pow(10.0, 2.0 + 6.0 * (double)(seed >> 11) / 9007199254740992.0);
        struct nvs_event e = range("usb", "libusb_bulk_transfer ep=0x81 IN 64B", (int64_t)i * 10000000,
                                   (int64_t)i * 10000000 + durations[i]);
        refused += nvs_figures_add(builder, &e, 1) != 0;
    }
    CHECK(refused == 0);
    for (int i = 0; i < 10; i++) {
        struct nvs_event e = range("cuda", "cuStreamSynchronize", i * 1000, i * 1000 + 100 * (i + 1));
        nvs_figures_add(builder, &e, 1);
    }
    struct nvs_report report = {0};
    CHECK(nvs_figures_report(builder, true, &report) == 0);
    const struct nvs_report_name *many = row_of(&report, "libusb_bulk_transfer");
    const struct nvs_report_name *few = row_of(&report, "cuStreamSynchronize");
    CHECK(many && many->estimated && many->count == MANY);
    CHECK(few && !few->estimated && few->count == 10 && few->stats[NVS_STAT_P50] == 500.0 &&
          few->stats[NVS_STAT_P99] == 1000.0);
    qsort(durations, MANY, sizeof *durations, compare);
    double sum = 0;
    for (size_t i = 0; i < MANY; i++)
        sum += (double)durations[i];
    if (many) {
        double p50 = (double)durations[(50 * MANY + 99) / 100 - 1], p99 = (double)durations[(99 * MANY + 99) / 100 - 1];
        CHECK(fabs(many->stats[NVS_STAT_P50] - p50) <= p50 * NVS_SKETCH_ERROR);
        CHECK(fabs(many->stats[NVS_STAT_P99] - p99) <= p99 * NVS_SKETCH_ERROR);
        CHECK(many->stats[NVS_STAT_MAX] == (double)durations[MANY - 1]);
        CHECK(fabs(many->stats[NVS_STAT_MEAN] - sum / MANY) < 1e-6 * sum / MANY);
    }
    nvs_figures_free(&report);
    nvs_figures_discard(builder);
}

static struct nvs_event frame(uint64_t number, int64_t start, int64_t end)
{
    char name[32];
    snprintf(name, sizeof name, "frame %llu", (unsigned long long)number);
    struct nvs_event e = range("nvtxshim", name, start, end);
    e.async = true;
    return e;
}

/* Frames of 1 ms, each with a USB call of 0.2 ms on the loop thread, written before the frame (as the
 * recorder writes them); a second thread's copy of 0.1 ms in each frame, its events reaching the reader
 * AFTER (a buffer flushed late): within the frames held open, exact; past them, late. */
static void check_breakdown(size_t lag, bool want_exact)
{
    struct nvs_figures_builder *builder = nvs_figures_begin(&events, 0);
    enum { FRAMES = 100 };
    for (size_t f = 0; f < FRAMES + lag; f++) {
        if (f < FRAMES) {
            int64_t start = (int64_t)f * 1000000;
            struct nvs_event call = range("usb", "libusb_bulk_transfer ep=0x81 IN 64B", start + 100000, start + 300000);
            struct nvs_event whole = frame(f + 1, start, start + 1000000);
            nvs_figures_add(builder, &call, 1);
            nvs_figures_add(builder, &whole, 1);
        }
        if (f >= lag) {
            int64_t start = (int64_t)(f - lag) * 1000000;
            struct nvs_event copy = range("cuda", "cuMemcpyHtoD 64KiB pageable", start + 500000, start + 600000);
            copy.tid = 8;
            nvs_figures_add(builder, &copy, 1);
        }
    }
    struct nvs_report report = {0};
    CHECK(nvs_figures_report(builder, true, &report) == 0 && report.process_count == 1);
    if (report.process_count == 1) {
        const struct nvs_report_process *process = &report.processes[0];
        CHECK(process->count == FRAMES);
        CHECK(process->estimated == !want_exact);
        CHECK(want_exact ? process->late_calls == 0 : process->late_calls > 0);
        /* late calls here overlap nothing of their column, so even counted late they are right */
        CHECK(process->stats[NVS_COLUMN_USB][NVS_STAT_MEAN] == 200000.0);
        CHECK(process->stats[NVS_COLUMN_CUDA][NVS_STAT_MEAN] == 100000.0);
        CHECK(process->stats[NVS_COLUMN_REST][NVS_STAT_MEAN] == 700000.0);
    }
    nvs_figures_free(&report);
    nvs_figures_discard(builder);
}

/* The same frame's calls overlapping, one of them late: counted twice, said. */
static void test_an_overlap_counted_late_is_said(void)
{
    struct nvs_figures_builder *builder = nvs_figures_begin(&events, 0);
    for (int f = 0; f < 40; f++) {
        struct nvs_event whole = frame((uint64_t)f + 1, f * 1000000, f * 1000000 + 1000000);
        nvs_figures_add(builder, &whole, 1);
    }
    /* frame 1 is long closed (16 open at most): two overlapping calls of 0.2 ms, 0.1 ms apart */
    struct nvs_event a = range("usb", "libusb_bulk_transfer ep=0x81 IN 64B", 100000, 300000);
    struct nvs_event b = range("usb", "libusb_bulk_transfer ep=0x02 OUT 8B", 200000, 400000);
    b.tid = 8;
    nvs_figures_add(builder, &a, 1);
    nvs_figures_add(builder, &b, 1);
    struct nvs_report report = {0};
    CHECK(nvs_figures_report(builder, true, &report) == 0 && report.process_count == 1);
    if (report.process_count == 1) {
        CHECK(report.processes[0].estimated && report.processes[0].late_calls == 2);
        CHECK(report.processes[0].frames[0].value[NVS_COLUMN_USB] == 400000);   /* the union is 300000 */
    }
    nvs_figures_free(&report);
    nvs_figures_discard(builder);
}

/* Marks of 20 texts of one kind: 8 told apart, the rest counted. */
static void test_marks_past_the_texts_told_apart(void)
{
    struct nvs_figures_builder *builder = nvs_figures_begin(&events, 0);
    for (int i = 0; i < 20; i++) {
        char text[64];
        snprintf(text, sizeof text, "dropped %d frames", i + 2);
        struct nvs_event mark = range("v4l2", text, i, i);
        mark.kind = NVS_EVENT_MARK;
        nvs_figures_add(builder, &mark, 1);
    }
    struct nvs_report report = {0};
    CHECK(nvs_figures_report(builder, true, &report) == 0 && report.mark_kind_count == 1);
    if (report.mark_kind_count == 1) {
        const struct nvs_report_mark_kind *kind = &report.marks[0];
        CHECK(kind->count == 20 && kind->text_count == 8 && kind->more_texts && kind->example_count == 3);
        CHECK(strcmp(kind->examples[0].text, "dropped 2 frames") == 0);
    }
    nvs_figures_free(&report);
    nvs_figures_discard(builder);
}

int main(void)
{
    test_a_sketch_within_its_error();
    check_breakdown(0, true);       /* the other thread in step */
    check_breakdown(10, true);      /* 10 frames behind: within the 16 held open */
    check_breakdown(40, false);     /* 40 behind: their frames closed */
    test_an_overlap_counted_late_is_said();
    test_marks_past_the_texts_told_apart();
    nvs_events_free(&events);
    return check_summary("figures");
}
