set terminal pngcairo size 900,500 font ',10'
set output 'layers-resident-40.png'
set title 'layer streaming, 40 layers resident: load and compute time per layer'
set grid
set key top left
set xlabel 'layer (position in the pass)'
set ylabel 'ms'
set yrange [0:*]
plot 'layers-resident-40.dat' index 0 using 1:2 with lines title 'mmap-resident-40 load', 'layers-resident-40.dat' index 0 using 1:3 with lines dashtype 2 title 'mmap-resident-40 compute', 'layers-resident-40.dat' index 1 using 1:2 with lines title 'uring-resident-40 load', 'layers-resident-40.dat' index 1 using 1:3 with lines dashtype 2 title 'uring-resident-40 compute', 'layers-resident-40.dat' index 2 using 1:2 with lines title 'gpuos-ram-resident-40 load', 'layers-resident-40.dat' index 2 using 1:3 with lines dashtype 2 title 'gpuos-ram-resident-40 compute', 'layers-resident-40.dat' index 3 using 1:2 with lines title 'gpuos-uring-resident-40 load', 'layers-resident-40.dat' index 3 using 1:3 with lines dashtype 2 title 'gpuos-uring-resident-40 compute'
