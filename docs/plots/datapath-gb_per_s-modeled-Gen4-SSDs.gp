set terminal pngcairo size 900,500 font ',10'
set output 'datapath-gb_per_s-modeled-Gen4-SSDs.png'
set title 'datapath, modeled Gen4 SSDs: GB/s'
set grid
set key top left
set style fill solid 0.6
set boxwidth 0.7
set ylabel 'GB/s'
set xtics rotate by -30
set yrange [0:*]
plot 'datapath-gb_per_s-modeled-Gen4-SSDs.dat' using 2:xtic(1) with boxes notitle
