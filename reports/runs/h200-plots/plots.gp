# Charts of /work/main/reports/runs/h200.json, written by `report plot`. Run in this folder: gnuplot plots.gp
# (report passes out_suffix='.tmp' and renames the images once gnuplot succeeds)
if (!exists("out_suffix")) out_suffix = ''
png_terminal(h) = sprintf(strstrt(GPVAL_TERMINALS, 'pngcairo') > 0 ? 'set terminal pngcairo size 960,%d noenhanced' : 'set terminal png size 960,%d noenhanced', h)

# ---- gather_block_size
reset
set title "Paged gather: GB/s vs block size (d128, 8 KV heads, bf16, random table)" . "\n" . "NVIDIA H200, kvmicro revision e95e3bac70fc"
set xlabel "block size (tokens)"
set ylabel "GB/s (read + written)"
set grid
set key below
set logscale x 2
set yrange [0:4864.95]
set terminal svg size 960,600 dynamic noenhanced
set output 'gather_block_size.svg'.out_suffix
plot 'gather_block_size.dat' index 0 using 1:2 with linespoints pointtype 7 title "NHD layout", 'gather_block_size.dat' index 1 using 1:2 with linespoints pointtype 7 title "HND layout", 4230.39 with lines dashtype 2 linewidth 1.5 title "copy ceiling 4230 GB/s"
eval png_terminal(600)
set output 'gather_block_size.png'.out_suffix
replot
unset output

# ---- offload_size
reset
set title "Host <-> device copies: GB/s vs transfer size (pinned host memory)" . "\n" . "NVIDIA H200, kvmicro revision e95e3bac70fc"
set xlabel "transfer size"
set ylabel "GB/s"
set grid
set key below
set logscale x 2
set yrange [0:115.749]
set format x "%.0b %BB"
set terminal svg size 960,600 dynamic noenhanced
set output 'offload_size.svg'.out_suffix
plot 'offload_size.dat' index 0 using 1:2 with linespoints pointtype 7 title "H2D pinned", 'offload_size.dat' index 1 using 1:2 with linespoints pointtype 7 title "D2H pinned", 'offload_size.dat' index 2 using 1:2 with linespoints pointtype 7 title "BIDIR pinned", 63.0154 with lines dashtype 2 linewidth 1.5 title "PCIe link, each direction 63.0 GB/s"
eval png_terminal(600)
set output 'offload_size.png'.out_suffix
replot
unset output

# ---- offload_scatter_h2d
reset
set title "Scattered KV blocks to the GPU (H2D, 64 MiB in all): GB/s vs block size" . "\n" . "NVIDIA H200, kvmicro revision e95e3bac70fc"
set xlabel "block size"
set ylabel "GB/s"
set grid
set key below
set logscale x 2
set yrange [0:72.4677]
set format x "%.0b %BB"
set terminal svg size 960,600 dynamic noenhanced
set output 'offload_scatter_h2d.svg'.out_suffix
plot 'offload_scatter_h2d.dat' index 0 using 1:2 with linespoints pointtype 7 dashtype 4 title "memcpy_per_block (baseline)", 'offload_scatter_h2d.dat' index 1 using 1:2 with linespoints pointtype 7 title "batch_async", 'offload_scatter_h2d.dat' index 2 using 1:2 with linespoints pointtype 7 title "staging", 'offload_scatter_h2d.dat' index 3 using 1:2 with linespoints pointtype 7 title "sm_mapped", 63.0154 with lines dashtype 2 linewidth 1.5 title "PCIe link, each direction 63.0 GB/s", 55.2871 with lines dashtype 3 linewidth 1.5 title "contiguous copy of 64 MiB: 55.3 GB/s"
eval png_terminal(600)
set output 'offload_scatter_h2d.png'.out_suffix
replot
unset output

# ---- offload_scatter_d2h
reset
set title "Scattered KV blocks to the host (D2H, 64 MiB in all): GB/s vs block size" . "\n" . "NVIDIA H200, kvmicro revision e95e3bac70fc"
set xlabel "block size"
set ylabel "GB/s"
set grid
set key below
set logscale x 2
set yrange [0:72.4677]
set format x "%.0b %BB"
set terminal svg size 960,600 dynamic noenhanced
set output 'offload_scatter_d2h.svg'.out_suffix
plot 'offload_scatter_d2h.dat' index 0 using 1:2 with linespoints pointtype 7 dashtype 4 title "memcpy_per_block (baseline)", 'offload_scatter_d2h.dat' index 1 using 1:2 with linespoints pointtype 7 title "batch_async", 'offload_scatter_d2h.dat' index 2 using 1:2 with linespoints pointtype 7 title "staging", 'offload_scatter_d2h.dat' index 3 using 1:2 with linespoints pointtype 7 title "sm_mapped", 63.0154 with lines dashtype 2 linewidth 1.5 title "PCIe link, each direction 63.0 GB/s", 55.3799 with lines dashtype 3 linewidth 1.5 title "contiguous copy of 64 MiB: 55.4 GB/s"
eval png_terminal(600)
set output 'offload_scatter_d2h.png'.out_suffix
replot
unset output

# ---- topk_pages
reset
set title "Top-k page selection: time vs pages, against the baselines" . "\n" . "NVIDIA H200, kvmicro revision e95e3bac70fc"
set xlabel "pages per row"
set ylabel "median time (us)"
set grid
set key below
set logscale x 2
set logscale y 10
set yrange [*:*]
set terminal svg size 960,600 dynamic noenhanced
set output 'topk_pages.svg'.out_suffix
plot 'topk_pages.dat' index 0 using 1:2 with linespoints pointtype 7 title "radix select, 32 rows, k = 16", 'topk_pages.dat' index 1 using 1:2 with linespoints pointtype 7 title "radix select, 512 rows, k = 128", 'topk_pages.dat' index 2 using 1:2 with linespoints pointtype 7 title "radix select, 512 rows, k = 16", 'topk_pages.dat' index 3 using 1:2 with linespoints pointtype 7 title "radix select, 512 rows, k = 512", 'topk_pages.dat' index 4 using 1:2 with linespoints pointtype 7 title "radix select, 128 rows, k = 128", 'topk_pages.dat' index 5 using 1:2 with linespoints pointtype 7 dashtype 4 title "cub_sort_topk, 32 rows, k = 16", 'topk_pages.dat' index 6 using 1:2 with linespoints pointtype 7 dashtype 4 title "cub_sort_topk, 512 rows, k = 128", 'topk_pages.dat' index 7 using 1:2 with linespoints pointtype 7 dashtype 4 title "cub_sort_topk, 128 rows, k = 128"
eval png_terminal(600)
set output 'topk_pages.png'.out_suffix
replot
unset output

# ---- quant_formats
reset
set title "KV quantization: GB/s per format (head_dim 128 where present)" . "\n" . "NVIDIA H200, kvmicro revision e95e3bac70fc"
set xlabel "GB/s (read + written)"
set ylabel ""
set grid xtics
set key below
set style fill solid 0.6 border
set ytics scale 0
set yrange [19.6:-0.6]
set xrange [0:4441.91]
set arrow from 4230.39, graph 0 to 4230.39, graph 1 nohead dashtype 2 linewidth 1.5
set terminal svg size 960,720 dynamic noenhanced
set output 'quant_formats.svg'.out_suffix
plot 'quant_formats.dat' index 0 using ($2/2):1:($2/2):(0.35):yticlabels(3) with boxxyerror title "GB/s", NaN with lines dashtype 2 linewidth 1.5 linecolor rgb 'black' title "copy ceiling 4230 GB/s"
eval png_terminal(720)
set output 'quant_formats.png'.out_suffix
replot
unset output
