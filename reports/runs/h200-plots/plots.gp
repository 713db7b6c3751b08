# Charts of /work/main/reports/runs/h200.json, written by `report plot`. Run in this folder: gnuplot plots.gp
# (report passes out_suffix='.tmp' and renames the images once gnuplot succeeds)
if (!exists("out_suffix")) out_suffix = ''
png_terminal(w, h) = sprintf(strstrt(GPVAL_TERMINALS, 'pngcairo') > 0 ? 'set terminal pngcairo size %d,%d noenhanced' : 'set terminal png size %d,%d noenhanced', w, h)
# twelve distinct line colours (gnuplot's default set repeats after eight)
set linetype 1 linecolor rgb '#9400d3'
set linetype 2 linecolor rgb '#009e73'
set linetype 3 linecolor rgb '#56b4e9'
set linetype 4 linecolor rgb '#e69f00'
set linetype 5 linecolor rgb '#f0e442'
set linetype 6 linecolor rgb '#0072b2'
set linetype 7 linecolor rgb '#e51e10'
set linetype 8 linecolor rgb '#000000'
set linetype 9 linecolor rgb '#8c564b'
set linetype 10 linecolor rgb '#ff69b4'
set linetype 11 linecolor rgb '#7f7f7f'
set linetype 12 linecolor rgb '#17becf'
set linetype cycle 12

# ---- gather_block_size
reset
set title "Paged gather: GB/s vs block size (d128, 8 KV heads, bf16, random table)" . "\n" . "NVIDIA H200, kvmicro revision 21c91ac34855"
set xlabel "block size (tokens)"
set ylabel "GB/s (read + written)"
set grid
set key below
set logscale x 2
set yrange [0:4956.38]
set terminal svg size 960,600 dynamic noenhanced
set output 'gather_block_size.svg'.out_suffix
plot 'gather_block_size.dat' index 0 using 1:2 with linespoints pointtype 7 linecolor 1 title "NHD layout", 'gather_block_size.dat' index 1 using 1:2 with linespoints pointtype 7 linecolor 2 title "HND layout", 4309.9 with lines dashtype 2 linewidth 1.5 title "copy ceiling 4310 GB/s"
eval png_terminal(960, 600)
set output 'gather_block_size.png'.out_suffix
replot
unset output

# ---- offload_size
reset
set title "Host <-> device copies: GB/s vs transfer size (pinned host memory)" . "\n" . "NVIDIA H200, kvmicro revision 21c91ac34855"
set xlabel "transfer size"
set ylabel "GB/s"
set grid
set key below
set logscale x 2
set yrange [0:116.492]
set format x "%.0b %BB"
set terminal svg size 960,600 dynamic noenhanced
set output 'offload_size.svg'.out_suffix
plot 'offload_size.dat' index 0 using 1:2 with linespoints pointtype 7 linecolor 1 title "H2D pinned", 'offload_size.dat' index 1 using 1:2 with linespoints pointtype 7 linecolor 2 title "D2H pinned", 'offload_size.dat' index 2 using 1:2 with linespoints pointtype 7 linecolor 3 title "BIDIR pinned", 63.0154 with lines dashtype 2 linewidth 1.5 title "PCIe link, each direction 63.0 GB/s"
eval png_terminal(960, 600)
set output 'offload_size.png'.out_suffix
replot
unset output

# ---- offload_scatter_h2d
reset
set title "Scattered KV blocks to the GPU (H2D, 64 MiB in all): GB/s vs block size" . "\n" . "NVIDIA H200, kvmicro revision 21c91ac34855"
set xlabel "block size"
set ylabel "GB/s"
set grid
set key below
set logscale x 2
set yrange [0:72.4677]
set format x "%.0b %BB"
set terminal svg size 960,600 dynamic noenhanced
set output 'offload_scatter_h2d.svg'.out_suffix
plot 'offload_scatter_h2d.dat' index 0 using 1:2 with linespoints pointtype 7 linecolor 1 dashtype 4 title "memcpy_per_block (baseline)", 'offload_scatter_h2d.dat' index 1 using 1:2 with linespoints pointtype 7 linecolor 2 title "batch_async", 'offload_scatter_h2d.dat' index 2 using 1:2 with linespoints pointtype 7 linecolor 3 title "staging", 'offload_scatter_h2d.dat' index 3 using 1:2 with linespoints pointtype 7 linecolor 4 title "sm_mapped", 63.0154 with lines dashtype 2 linewidth 1.5 title "PCIe link, each direction 63.0 GB/s", 55.4135 with lines dashtype 3 linewidth 1.5 title "contiguous copy of 64 MiB: 55.4 GB/s"
eval png_terminal(960, 600)
set output 'offload_scatter_h2d.png'.out_suffix
replot
unset output

# ---- offload_scatter_d2h
reset
set title "Scattered KV blocks to the host (D2H, 64 MiB in all): GB/s vs block size" . "\n" . "NVIDIA H200, kvmicro revision 21c91ac34855"
set xlabel "block size"
set ylabel "GB/s"
set grid
set key below
set logscale x 2
set yrange [0:72.4677]
set format x "%.0b %BB"
set terminal svg size 960,600 dynamic noenhanced
set output 'offload_scatter_d2h.svg'.out_suffix
plot 'offload_scatter_d2h.dat' index 0 using 1:2 with linespoints pointtype 7 linecolor 1 dashtype 4 title "memcpy_per_block (baseline)", 'offload_scatter_d2h.dat' index 1 using 1:2 with linespoints pointtype 7 linecolor 2 title "batch_async", 'offload_scatter_d2h.dat' index 2 using 1:2 with linespoints pointtype 7 linecolor 3 title "staging", 'offload_scatter_d2h.dat' index 3 using 1:2 with linespoints pointtype 7 linecolor 4 title "sm_mapped", 63.0154 with lines dashtype 2 linewidth 1.5 title "PCIe link, each direction 63.0 GB/s", 55.3806 with lines dashtype 3 linewidth 1.5 title "contiguous copy of 64 MiB: 55.4 GB/s"
eval png_terminal(960, 600)
set output 'offload_scatter_d2h.png'.out_suffix
replot
unset output

# ---- topk_pages
reset
set title "Top-k page selection: time vs pages, against the baselines (dashed, same colour: same rows and k)" . "\n" . "NVIDIA H200, kvmicro revision 21c91ac34855"
set xlabel "pages per row"
set ylabel "median time (us)"
set grid
set key below
set logscale x 2
set logscale y 10
set yrange [*:*]
set terminal svg size 960,600 dynamic noenhanced
set output 'topk_pages.svg'.out_suffix
plot 'topk_pages.dat' index 0 using 1:2 with linespoints pointtype 7 linecolor 1 title "radix select, 32 rows, k = 16", 'topk_pages.dat' index 1 using 1:2 with linespoints pointtype 7 linecolor 2 title "radix select, 512 rows, k = 128", 'topk_pages.dat' index 2 using 1:2 with linespoints pointtype 7 linecolor 3 title "radix select, 512 rows, k = 16", 'topk_pages.dat' index 3 using 1:2 with linespoints pointtype 7 linecolor 4 title "radix select, 512 rows, k = 512", 'topk_pages.dat' index 4 using 1:2 with linespoints pointtype 7 linecolor 5 title "radix select, 128 rows, k = 128", 'topk_pages.dat' index 5 using 1:2 with linespoints pointtype 7 linecolor 1 dashtype 4 title "cub_sort_topk, 32 rows, k = 16", 'topk_pages.dat' index 6 using 1:2 with linespoints pointtype 7 linecolor 2 dashtype 4 title "cub_sort_topk, 512 rows, k = 128", 'topk_pages.dat' index 7 using 1:2 with linespoints pointtype 7 linecolor 5 dashtype 4 title "cub_sort_topk, 128 rows, k = 128"
eval png_terminal(960, 600)
set output 'topk_pages.png'.out_suffix
replot
unset output

# ---- quant_formats
reset
set title "KV quantization: GB/s per format (head_dim 128 where present)" . "\n" . "NVIDIA H200, kvmicro revision 21c91ac34855"
set xlabel "GB/s (read + written)"
set ylabel ""
set grid xtics
set key below
set style fill solid 0.6 border
set ytics scale 0
set yrange [28.6:-0.6]
set xrange [0:4525.39]
set arrow from 4309.9, graph 0 to 4309.9, graph 1 nohead dashtype 2 linewidth 1.5
set terminal svg size 960,954 dynamic noenhanced
set output 'quant_formats.svg'.out_suffix
plot 'quant_formats.dat' index 0 using ($2/2):1:($2/2):(0.35):yticlabels(3) with boxxyerror title "GB/s", NaN with lines dashtype 2 linewidth 1.5 linecolor rgb 'black' title "copy ceiling 4310 GB/s"
eval png_terminal(960, 954)
set output 'quant_formats.png'.out_suffix
replot
unset output

# ---- decode_context
reset
set title "Decode attention step vs context per KV format and head layout (batch 16, head_dim 128)" . "\n" . "NVIDIA H200, kvmicro revision 21c91ac34855"
set xlabel "context (tokens per sequence)"
set ylabel "median time per step (us)"
set grid
set key below
set logscale x 2
set logscale y 10
set yrange [*:*]
set terminal svg size 960,850 dynamic noenhanced
set output 'decode_context.svg'.out_suffix
plot 'decode_context.dat' index 0 using 1:2 with linespoints pointtype 7 linecolor 1 title "bf16 gqa32x8", 'decode_context.dat' index 1 using 1:2 with linespoints pointtype 7 linecolor 1 dashtype 4 title "bf16 gqa32x8 at the read ceiling", 'decode_context.dat' index 2 using 1:2 with linespoints pointtype 7 linecolor 2 title "fp8_e4m3_tokhead gqa32x8", 'decode_context.dat' index 3 using 1:2 with linespoints pointtype 7 linecolor 2 dashtype 4 title "fp8_e4m3_tokhead gqa32x8 at the read ceiling", 'decode_context.dat' index 4 using 1:2 with linespoints pointtype 7 linecolor 3 title "bf16 mha32x32", 'decode_context.dat' index 5 using 1:2 with linespoints pointtype 7 linecolor 3 dashtype 4 title "bf16 mha32x32 at the read ceiling", 'decode_context.dat' index 6 using 1:2 with linespoints pointtype 7 linecolor 4 title "bf16 gqa64x8", 'decode_context.dat' index 7 using 1:2 with linespoints pointtype 7 linecolor 4 dashtype 4 title "bf16 gqa64x8 at the read ceiling", 'decode_context.dat' index 8 using 1:2 with linespoints pointtype 7 linecolor 5 title "bf16 mqa32x1", 'decode_context.dat' index 9 using 1:2 with linespoints pointtype 7 linecolor 5 dashtype 4 title "bf16 mqa32x1 at the read ceiling", 'decode_context.dat' index 10 using 1:2 with linespoints pointtype 7 linecolor 6 title "fp8_e4m3_tensor gqa32x8", 'decode_context.dat' index 11 using 1:2 with linespoints pointtype 7 linecolor 6 dashtype 4 title "fp8_e4m3_tensor gqa32x8 at the read ceiling", 'decode_context.dat' index 12 using 1:2 with linespoints pointtype 7 linecolor 7 title "fp8_e5m2_tokhead gqa32x8", 'decode_context.dat' index 13 using 1:2 with linespoints pointtype 7 linecolor 7 dashtype 4 title "fp8_e5m2_tokhead gqa32x8 at the read ceiling", 'decode_context.dat' index 14 using 1:2 with linespoints pointtype 7 linecolor 8 title "int3_g32 gqa32x8", 'decode_context.dat' index 15 using 1:2 with linespoints pointtype 7 linecolor 8 dashtype 4 title "int3_g32 gqa32x8 at the read ceiling", 'decode_context.dat' index 16 using 1:2 with linespoints pointtype 7 linecolor 9 title "turboquant3 gqa32x8", 'decode_context.dat' index 17 using 1:2 with linespoints pointtype 7 linecolor 9 dashtype 4 title "turboquant3 gqa32x8 at the read ceiling"
eval png_terminal(960, 850)
set output 'decode_context.png'.out_suffix
replot
unset output

# ---- techniques_capacity
reset
set title "Technique table: capacity (computed, vLLM's rules)" . "\n" . "NVIDIA H200, kvmicro revision 21c91ac34855"
set xlabel "max concurrency / the model as configured's (x)"
set ylabel ""
set grid xtics
set key below
set style fill solid 0.6 border
set ytics scale 0
set yrange [21.6:-0.6]
set xrange [0:8.4]
set arrow from 1, graph 0 to 1, graph 1 nohead dashtype 2 linewidth 1.5
set terminal svg size 960,772 dynamic noenhanced
set output 'techniques_capacity.svg'.out_suffix
plot 'techniques_capacity.dat' index 0 using ($2/2):1:($2/2):(0.35):yticlabels(3) with boxxyerror title "capacity (computed)", NaN with lines dashtype 2 linewidth 1.5 linecolor rgb 'black' title "the model as configured (1.00x)"
eval png_terminal(960, 772)
set output 'techniques_capacity.png'.out_suffix
replot
unset output

# ---- techniques_step
reset
set title "Technique table: decode attention step (measured)" . "\n" . "NVIDIA H200, kvmicro revision 21c91ac34855"
set xlabel "median time per step (us)"
set ylabel ""
set grid xtics
set key below
set style fill solid 0.6 border
set ytics scale 0
set yrange [6.6:-0.6]
set xrange [0:534.895]
set terminal svg size 1266,600 dynamic noenhanced
set output 'techniques_step.svg'.out_suffix
plot 'techniques_step.dat' index 0 using ($2/2):1:($2/2):(0.35):yticlabels(3) with boxxyerror title "time per step (measured)"
eval png_terminal(1266, 600)
set output 'techniques_step.png'.out_suffix
replot
unset output

# ---- prefix_cliff
reset
set title "Prefix-cache cliff (qwen3-8b, 400032-token cache): hit rate of the repeat pass vs working set" . "\n" . "NVIDIA H200, kvmicro revision 21c91ac34855; simulated on the host (KV budget 58987118592 B, simulator revision 21c91ac34855)"
set xlabel "working set / cache capacity (x)"
set ylabel "hit rate, last pass (%)"
set grid
set key below
set yrange [0:114.782]
set arrow from 1, graph 0 to 1, graph 1 nohead dashtype 2 linewidth 1.5 linecolor rgb 'black'
set terminal svg size 960,600 dynamic noenhanced
set output 'prefix_cliff.svg'.out_suffix
plot 'prefix_cliff.dat' index 0 using 1:2 with linespoints pointtype 7 linecolor 1 title "LRU: vLLM's free queue", 'prefix_cliff.dat' index 1 using 1:2 with linespoints pointtype 7 linecolor 2 dashtype 4 title "MRU: keep what fitted", NaN with lines dashtype 2 linewidth 1.5 linecolor rgb 'black' title "working set = cache (1x)"
eval png_terminal(960, 600)
set output 'prefix_cliff.png'.out_suffix
replot
unset output
