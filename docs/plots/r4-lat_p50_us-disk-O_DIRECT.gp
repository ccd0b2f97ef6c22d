set terminal pngcairo size 900,500 font ',10'
set output 'r4-lat_p50_us-disk-O_DIRECT.png'
set title 'random 4 KiB reads, disk, O_DIRECT: p50 latency (us) against queue depth (client threads)'
set grid
set key top left
set logscale x 2
set logscale y
set xlabel 'queue depth / client threads'
set ylabel 'p50 latency (us)'
plot 'r4-lat_p50_us-disk-O_DIRECT.dat' index 0 with linespoints title 'gpuos, emu: uring backend (GPU)', 'r4-lat_p50_us-disk-O_DIRECT.dat' index 1 with linespoints title 'liburing, CPU reads'
