/* `report --help`. Kept apart so a test can check that the series it names are series a case table
 * declares (tests/cpu_params_docs.c). */
#ifndef KM_REPORT_USAGE_H
#define KM_REPORT_USAGE_H

static const char km_report_usage_text[] =
    "usage: report compare A.json B.json [C.json ...] [--scaling] [--format text|markdown|csv|json]\n"
    "       report tables A.json [--format text|markdown|csv|json]\n"
    "       report techniques A.json [--model NAME|config.json] [--format text|markdown|csv|json]\n"
    "       report plot A.json [--prefix-sim SIM.json] --out DIR\n"
    "       report predict PARAMS.json SERIES BYTES\n"
    "       report predict PARAMS.json SERIES AXIS=VALUE [AXIS=VALUE...]\n"
    "compare: cases matched by name, ratios B/A of median time and GB/s, each row's share of its own run's\n"
    "         class ceiling; rows more than 3% apart are flagged, with both runs' measured GPU state (clocks,\n"
    "         temperature, throttle reasons, CV) and what differs; cases in only one file are listed. Then, for\n"
    "         two or more runs, what each primitive scales with: its GB/s over its own card's ceiling of its\n"
    "         traffic class (copy, read, write, mixed; the pinned copy for h2d/d2h rows); memory bandwidth or\n"
    "         PCIe where that share stays within 10% while the ceiling moves more, neither where it does not,\n"
    "         undetermined where the cards' ceilings are within 10% or a run lacks the row. Three or more runs,\n"
    "         or --scaling: only that table (CSV of two runs is the B/A table unless --scaling).\n"
    "tables:  the latency table rebuilt from the file's benchmarks and the stored byte table.\n"
    "techniques: the twelve techniques side by side: the stored byte table's capacity rows (computed) and\n"
    "         the run's representative rows of each technique (measured), each in its own unit. --model M:\n"
    "         the capacity rows computed for M (a preset such as deepseek-v3 or nemotron-h-8b, or a config.json)\n"
    "         with the run's KV budget and block size, beside the run's measured rows as they were run.\n"
    "plot:    gather GB/s vs block size; host<->device copies vs size and scattered KV blocks vs block size,\n"
    "         with the PCIe link and the contiguous copy as lines; top-k time vs pages beside its baselines;\n"
    "         quant GB/s per format; decode step time vs context per format and head layout (batch 16) with\n"
    "         each row's bytes read at the read ceiling dashed; the technique table as bars (capacity computed,\n"
    "         decode step measured); with --prefix-sim (micro --prefix-sim cliff --sweep --json SIM.json) the\n"
    "         prefix-cache cliff, hit rate vs working set / capacity. Titled with the run's GPU and revision, as\n"
    "         DIR/*.svg and *.png through gnuplot; without gnuplot, the data and DIR/plots.gp.\n"
    "predict: time of one call from a kvmicro-params/2 file (reports/PARAMS.md), e.g.\n"
    "         report predict h200-params.json offload/fit/h2d/pinned 256KiB\n"
    "         report predict h200-params.json attn/decode/gqa32x8/d128/fp8_e4m3_tokhead batch=16 context=32768\n"
    "         (a kvmicro-params/1 file is refused with one line saying so)\n"
    "       report --version\n"
    "Default format: markdown. Exit: 0 ok, 1 gnuplot failed, 2 bad input.\n";

#endif
