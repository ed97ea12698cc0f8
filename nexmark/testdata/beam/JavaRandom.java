import java.util.Random;

/**
 * Prints known values of java.util.Random for testing a Go port of its LCG.
 * Format: seed<TAB>method<TAB>v1 v2 v3 v4 v5 ; a fresh Random(seed) per line.
 * Doubles are printed with Double.toString. Then lines
 * price<TAB>first seed<TAB>100 values: round(10^(nextDouble()*6)*100).
 */
public class JavaRandom {
  interface Draw { String next(Random r); }

  public static void main(String[] args) {
    long[] seeds = {0L, 1L, 42L, -7L, 123456789L};
    String[] names = {
      "nextInt()", "nextInt(5)", "nextInt(100)", "nextInt(1048576)",
      "nextInt(2000000000)", "nextLong()", "nextDouble()"
    };
    Draw[] draws = {
      r -> Integer.toString(r.nextInt()),
      r -> Integer.toString(r.nextInt(5)),
      r -> Integer.toString(r.nextInt(100)),
      r -> Integer.toString(r.nextInt(1 << 20)),
      r -> Integer.toString(r.nextInt(2_000_000_000)),
      r -> Long.toString(r.nextLong()),
      r -> Double.toString(r.nextDouble()),
    };
    StringBuilder out = new StringBuilder();
    out.append("# java.util.Random reference values (").append(System.getProperty("java.vendor"))
        .append(' ').append(System.getProperty("java.version"))
        .append("); seed<TAB>method<TAB>5 values; fresh new Random(seed) per line\n");
    for (long seed : seeds) {
      for (int m = 0; m < names.length; m++) {
        Random r = new Random(seed);
        out.append(seed).append('\t').append(names[m]).append('\t');
        for (int i = 0; i < 5; i++) {
          if (i > 0) out.append(' ');
          out.append(draws[m].next(r));
        }
        out.append('\n');
      }
    }
    // Prices as the Nexmark generator draws them (Math.pow and Math.round
    // of Java), for seeds 0..1999, 100 per line: checks the Go port's
    // floating point against Java's.
    for (int line = 0; line < 20; line++) {
      out.append("price\t").append(line * 100).append('\t');
      for (int i = 0; i < 100; i++) {
        if (i > 0) out.append(' ');
        Random r = new Random(line * 100 + i);
        out.append(Math.round(Math.pow(10.0, r.nextDouble() * 6.0) * 100.0));
      }
      out.append('\n');
    }
    System.out.print(out);
  }
}
