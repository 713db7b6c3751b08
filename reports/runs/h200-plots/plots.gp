# Charts of /work/main/reports/runs/h200.json, written by `report plot`. Run in this folder: gnuplot plots.gp
# (report passes out_suffix='.tmp' and renames the images once gnuplot succeeds)
if (!exists("out_suffix")) out_suffix = ''
png_terminal = strstrt(GPVAL_TERMINALS, 'pngcairo') > 0 ? 'set terminal pngcairo size 960,600 noenhanced' : 'set terminal png size 960,600 noenhanced'

# ---- gather_block_size
reset
set title "Paged gather: GB/s vs block size (d128, 8 KV heads, bf16, random table)"
set xlabel "block size (tokens)"
set ylabel "GB/s (read + written)"
set grid
set key top left
set yrange [0:4899.86]
set logscale x 2
set terminal svg size 960,600 dynamic noenhanced
set output 'gather_block_size.svg'.out_suffix
plot 'gather_block_size.dat' index 0 using 1:2 with linespoints pointtype 7 title "NHD layout", 'gather_block_size.dat' index 1 using 1:2 with linespoints pointtype 7 title "HND layout", 4260.7 with lines dashtype 2 title "ceiling 4261 GB/s"
eval png_terminal
set output 'gather_block_size.png'.out_suffix
replot
unset output

# ---- offload_size
reset
set title "Host <-> device copies: GB/s vs transfer size (pinned host memory)"
set xlabel "transfer size"
set ylabel "GB/s"
set grid
set key top left
set yrange [0:*]
set logscale x 2
set format x "%.0b %BB"
set terminal svg size 960,600 dynamic noenhanced
set output 'offload_size.svg'.out_suffix
plot 'offload_size.dat' index 0 using 1:2 with linespoints pointtype 7 title "H2D pinned", 'offload_size.dat' index 1 using 1:2 with linespoints pointtype 7 title "D2H pinned"
eval png_terminal
set output 'offload_size.png'.out_suffix
replot
unset output

# ---- topk_pages
reset
set title "Top-k page selection: time vs pages"
set xlabel "pages per row"
set ylabel "median time (us)"
set grid
set key top left
set yrange [0:*]
set logscale x 2
set terminal svg size 960,600 dynamic noenhanced
set output 'topk_pages.svg'.out_suffix
plot 'topk_pages.dat' index 0 using 1:2 with linespoints pointtype 7 title "32 rows, k = 16", 'topk_pages.dat' index 1 using 1:2 with linespoints pointtype 7 title "512 rows, k = 128", 'topk_pages.dat' index 2 using 1:2 with linespoints pointtype 7 title "512 rows, k = 16", 'topk_pages.dat' index 3 using 1:2 with linespoints pointtype 7 title "512 rows, k = 512", 'topk_pages.dat' index 4 using 1:2 with linespoints pointtype 7 title "128 rows, k = 128"
eval png_terminal
set output 'topk_pages.png'.out_suffix
replot
unset output

# ---- quant_formats
reset
set title "KV quantization: GB/s per format (head_dim 128 where present)"
set xlabel ""
set ylabel "GB/s (read + written)"
set grid
set key top left
set yrange [0:5560.85]
set style fill solid 0.6 border
set boxwidth 0.7
set xtics rotate by -40 left
set xrange [-0.6:*]
set bmargin 10
set key top right
set terminal svg size 960,600 dynamic noenhanced
set output 'quant_formats.svg'.out_suffix
plot 'quant_formats.dat' index 0 using 1:2:xtic(3) with boxes title "GB/s", 4260.7 with lines dashtype 2 title "ceiling 4261 GB/s"
eval png_terminal
set output 'quant_formats.png'.out_suffix
replot
unset output
