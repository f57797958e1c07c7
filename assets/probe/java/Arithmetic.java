package probe;

import java.util.ArrayList;
import java.util.List;

/** Arithmetic helpers for the codescope probe corpus. */
public class Arithmetic {
    static int add(int a, int b) {
        int x = a + b;
        return x;
    }

    static int clamp(int value, int low, int high) {
        if (value < low) {
            return low;
        }
        if (value > high) {
            return high;
        }
        return value;
    }

    static double mean(double[] values) {
        if (values.length == 0) {
            return 0.0;
        }
        double sum = 0;
        for (double v : values) {
            sum += v;
        }
        return sum / values.length;
    }

    static int gcd(int a, int b) {
        while (b != 0) {
            int t = a % b;
            a = b;
            b = t;
        }
        return Math.abs(a);
    }

    static long lcm(long a, long b) {
        if (a == 0 || b == 0) {
            return 0;
        }
        return Math.abs(a * b) / gcd((int) a, (int) b);
    }

    static boolean isPrime(int n) {
        if (n < 2) {
            return false;
        }
        for (int i = 2; i * i <= n; i++) {
            if (n % i == 0) {
                return false;
            }
        }
        return true;
    }

    static List<Integer> primesBelow(int limit) {
        boolean[] composite = new boolean[limit];
        List<Integer> primes = new ArrayList<>();
        for (int n = 2; n < limit; n++) {
            if (!composite[n]) {
                primes.add(n);
                for (long k = (long) n * n; k < limit; k += n) {
                    composite[(int) k] = true;
                }
            }
        }
        return primes;
    }

    static long factorial(int n) {
        long result = 1;
        for (int k = 2; k <= n; k++) {
            result *= k;
        }
        return result;
    }

    static long fibonacci(int n) {
        long a = 0, b = 1;
        for (int i = 0; i < n; i++) {
            long next = a + b;
            a = b;
            b = next;
        }
        return a;
    }

    static long power(long base, int exp) {
        long result = 1;
        while (exp > 0) {
            if ((exp & 1) == 1) {
                result *= base;
            }
            base *= base;
            exp >>= 1;
        }
        return result;
    }

    static int digitSum(int n) {
        int total = 0;
        n = Math.abs(n);
        while (n > 0) {
            total += n % 10;
            n /= 10;
        }
        return total;
    }

    static double hypotenuse(double a, double b) {
        return Math.sqrt(a * a + b * b);
    }

    static double celsiusToFahrenheit(double c) {
        return c * 9 / 5 + 32;
    }

    static double compoundInterest(double principal, double rate, int years) {
        double amount = principal;
        for (int year = 0; year < years; year++) {
            amount = amount * (1 + rate);
        }
        return amount - principal;
    }

    static double[] solveQuadratic(double a, double b, double c) {
        double disc = b * b - 4 * a * c;
        if (disc < 0) {
            return new double[0];
        }
        double root = Math.sqrt(disc);
        return new double[] {(-b + root) / (2 * a), (-b - root) / (2 * a)};
    }

    static double dot(double[] u, double[] v) {
        double sum = 0;
        for (int i = 0; i < u.length; i++) {
            sum += u[i] * v[i];
        }
        return sum;
    }

    static int[][] matmul(int[][] a, int[][] b) {
        int rows = a.length, cols = b[0].length;
        int[][] out = new int[rows][cols];
        for (int i = 0; i < rows; i++) {
            for (int j = 0; j < cols; j++) {
                for (int k = 0; k < b.length; k++) {
                    out[i][j] += a[i][k] * b[k][j];
                }
            }
        }
        return out;
    }

    static int[][] transpose(int[][] m) {
        int[][] t = new int[m[0].length][m.length];
        for (int i = 0; i < m.length; i++) {
            for (int j = 0; j < m[0].length; j++) {
                t[j][i] = m[i][j];
            }
        }
        return t;
    }

    static int[] runningTotal(int[] values) {
        int[] out = new int[values.length];
        int total = 0;
        for (int i = 0; i < values.length; i++) {
            total = total + values[i];
            out[i] = total;
        }
        return out;
    }

    static double safeDivide(double a, double b, double fallback) {
        if (b == 0.0) {
            return fallback;
        }
        return a / b;
    }

    static String binaryDigits(int n) {
        if (n == 0) {
            return "0";
        }
        StringBuilder sb = new StringBuilder();
        while (n > 0) {
            sb.append(n & 1);
            n >>>= 1;
        }
        return sb.reverse().toString();
    }

    static int collatzSteps(long n) {
        int steps = 0;
        while (n != 1) {
            n = n % 2 == 0 ? n / 2 : 3 * n + 1;
            steps++;
        }
        return steps;
    }

    static int sign(double x) {
        return x > 0 ? 1 : (x < 0 ? -1 : 0);
    }

    static double lerp(double a, double b, double t) {
        return a + (b - a) * t;
    }

    static int max(int[] values) {
        int best = Integer.MIN_VALUE;
        for (int v : values) {
            best = Math.max(best, v);
        }
        return best;
    }

    static boolean isPerfect(int n) {
        int sum = 1;
        for (int d = 2; d * d <= n; d++) {
            if (n % d == 0) {
                sum += d;
                if (d != n / d) {
                    sum += n / d;
                }
            }
        }
        return n > 1 && sum == n;
    }

    static long binomial(int n, int k) {
        long result = 1;
        for (int i = 1; i <= k; i++) {
            result = result * (n - k + i) / i;
        }
        return result;
    }

    static double roundTo(double value, int places) {
        double scale = Math.pow(10, places);
        return Math.round(value * scale) / scale;
    }

    static int reverseNumber(int n) {
        int reversed = 0;
        while (n != 0) {
            reversed = reversed * 10 + n % 10;
            n /= 10;
        }
        return reversed;
    }

    static boolean isLeapYear(int year) {
        return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    }
}
