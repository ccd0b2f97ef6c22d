set terminal pngcairo size 900,500 font ',10'
set output 'r4-lat_p99_us-page-cache.png'
set title 'random 4 KiB reads, page cache: p99 latency (us) against queue depth (client threads)'
set grid
set key top left
set logscale x 2
set logscale y
set xlabel 'queue depth / client threads'
set ylabel 'p99 latency (us)'
plot 'r4-lat_p99_us-page-cache.dat' index 0 with linespoints title 'gpuos, emu: uring backend (GPU)', 'r4-lat_p99_us-page-cache.dat' index 1 with linespoints title 'liburing, CPU reads'
