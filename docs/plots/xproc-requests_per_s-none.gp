set terminal pngcairo size 900,500 font ',10'
set output 'xproc-requests_per_s-none.png'
set title 'xproc: NOPs/s'
set grid
set key top left
set style fill solid 0.6
set boxwidth 0.7
set ylabel 'NOPs/s'
set xtics rotate by -30
set yrange [0:*]
plot 'xproc-requests_per_s-none.dat' using 2:xtic(1) with boxes notitle
