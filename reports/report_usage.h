/* `report --help`. Kept apart so a test can check that the series it names are series a case table
 * declares (tests/cpu_params_docs.c). */
#ifndef KM_REPORT_USAGE_H
#define KM_REPORT_USAGE_H

static const char km_report_usage_text[] =
    "usage: report compare A.json B.json [--format text|markdown|csv|json]\n"
    "       report tables A.json [--format text|markdown|csv|json]\n"
    "       report techniques A.json [--format text|markdown|csv|json]\n"
    "       report plot A.json --out DIR\n"
    "       report predict PARAMS.json SERIES BYTES\n"
    "       report predict PARAMS.json SERIES AXIS=VALUE [AXIS=VALUE...]\n"
    "compare: cases matched by name, ratios B/A of median time and GB/s, each row's share of its own run's\n"
    "         class ceiling; rows more than 3% apart are flagged, with both runs' measured GPU state (clocks,\n"
    "         temperature, throttle reasons, CV) and what differs; cases in only one file are listed.\n"
    "tables:  the latency table rebuilt from the file's benchmarks and the stored byte table.\n"
    "techniques: the twelve techniques side by side: the stored byte table's capacity rows (computed) and\n"
    "         the run's representative rows of each technique (measured), each in its own unit.\n"
    "plot:    gather GB/s vs block size; host<->device copies vs size and scattered KV blocks vs block size,\n"
    "         with the PCIe link and the contiguous copy as lines; top-k time vs pages beside its baselines;\n"
    "         quant GB/s per format; titled with the run's GPU and revision, as DIR/*.svg and *.png through\n"
    "         gnuplot; without gnuplot, the data and DIR/plots.gp.\n"
    "predict: time of one call from a kvmicro-params/2 file (reports/PARAMS.md), e.g.\n"
    "         report predict h200-params.json offload/h2d/pinned 64MiB\n"
    "         report predict h200-params.json offload/fit/h2d/pinned 256KiB\n"
    "         report predict h200-params.json sparse/dense batch=16 context=131072\n"
    "       report --version\n"
    "Default format: markdown. Exit: 0 ok, 1 gnuplot failed, 2 bad input.\n";

#endif
