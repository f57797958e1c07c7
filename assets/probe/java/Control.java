package probe;

import java.io.BufferedReader;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.function.BinaryOperator;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

/** Control flow, exceptions, lambdas and generics for the codescope probe corpus. */
public class Control {
    static List<String> readLines(Path path) {
        List<String> lines = new ArrayList<>();
        try (BufferedReader reader = Files.newBufferedReader(path)) {
            String line;
            while ((line = reader.readLine()) != null) {
                lines.add(line);
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot read " + path, e);
        }
        return lines;
    }

    static <T> T retry(Callable<T> action, int attempts) throws Exception {
        Exception last = null;
        for (int attempt = 0; attempt < attempts; attempt++) {
            try {
                return action.call();
            } catch (IOException e) {
                last = e;
            }
        }
        throw new RuntimeException("gave up", last);
    }

    static String classify(int n) {
        if (n < 0) {
            return "negative";
        } else if (n == 0) {
            return "zero";
        } else if (n < 10) {
            return "small";
        } else {
            return "large";
        }
    }

    static List<String> fizzBuzz(int n) {
        List<String> out = new ArrayList<>();
        for (int i = 1; i <= n; i++) {
            if (i % 15 == 0) {
                out.add("FizzBuzz");
            } else if (i % 3 == 0) {
                out.add("Fizz");
            } else if (i % 5 == 0) {
                out.add("Buzz");
            } else {
                out.add(Integer.toString(i));
            }
        }
        return out;
    }

    static String dayName(int day) {
        switch (day) {
            case 1:
                return "Monday";
            case 2:
                return "Tuesday";
            case 3:
                return "Wednesday";
            default:
                return "Other";
        }
    }

    static int daysIn(String month) {
        return switch (month) {
            case "feb" -> 28;
            case "apr", "jun", "sep", "nov" -> 30;
            default -> 31;
        };
    }

    static <A, B, C> Function<A, C> compose(Function<B, C> f, Function<A, B> g) {
        return x -> f.apply(g.apply(x));
    }

    static <T> T applyAll(List<UnaryOperator<T>> funcs, T value) {
        for (UnaryOperator<T> f : funcs) {
            value = f.apply(value);
        }
        return value;
    }

    static Supplier<Integer> makeCounter() {
        int[] count = {0};
        return () -> ++count[0];
    }

    static <T> T reduce(List<T> items, T identity, BinaryOperator<T> op) {
        T acc = identity;
        for (T item : items) {
            acc = op.apply(acc, item);
        }
        return acc;
    }

    static int validateAge(Object age) {
        if (!(age instanceof Integer)) {
            throw new IllegalArgumentException("age must be an int");
        }
        int a = (Integer) age;
        if (a < 0 || a > 150) {
            throw new IllegalArgumentException("age out of range");
        }
        return a;
    }

    static double[] parseNumbers(String[] tokens) {
        List<Double> numbers = new ArrayList<>();
        for (String token : tokens) {
            try {
                numbers.add(Double.parseDouble(token));
            } catch (NumberFormatException e) {
                continue;
            } finally {
                assert token != null;
            }
        }
        double[] out = new double[numbers.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = numbers.get(i);
        }
        return out;
    }

    static int firstNegative(int[] values) {
        int index = -1;
        for (int i = 0; i < values.length; i++) {
            if (values[i] < 0) {
                index = i;
                break;
            }
        }
        return index;
    }

    static String stateMachine(List<String> events) {
        String state = "idle";
        for (String event : events) {
            if (state.equals("idle") && event.equals("start")) {
                state = "running";
            } else if (state.equals("running") && event.equals("pause")) {
                state = "paused";
            } else if (state.equals("paused") && event.equals("resume")) {
                state = "running";
            } else if (event.equals("stop")) {
                state = "idle";
            }
        }
        return state;
    }

    static List<int[]> nestedLoops(int n) {
        List<int[]> pairs = new ArrayList<>();
        outer:
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < i; j++) {
                if (i * j > 100) {
                    break outer;
                }
                if ((i + j) % 3 == 0) {
                    pairs.add(new int[] {i, j});
                }
            }
        }
        return pairs;
    }

    static int doWhileSum(int limit) {
        int sum = 0, i = 0;
        do {
            sum += i;
            i++;
        } while (i < limit);
        return sum;
    }

    static String describe(Object o) {
        if (o instanceof String s && !s.isEmpty()) {
            return "string of length " + s.length();
        }
        if (o instanceof Integer n) {
            return n > 0 ? "positive int" : "non-positive int";
        }
        return o == null ? "null" : o.getClass().getSimpleName();
    }

    static Runnable logger(List<String> sink, String message) {
        return new Runnable() {
            @Override
            public void run() {
                sink.add(message);
            }
        };
    }

    static <K, V extends Comparable<V>> K argMax(Map<K, V> map) {
        K best = null;
        V bestValue = null;
        for (Map.Entry<K, V> e : map.entrySet()) {
            if (bestValue == null || e.getValue().compareTo(bestValue) > 0) {
                best = e.getKey();
                bestValue = e.getValue();
            }
        }
        return best;
    }

    static long timeIt(Runnable task) {
        long start = System.nanoTime();
        task.run();
        return System.nanoTime() - start;
    }

    static int ternaryChain(int a, int b, int c) {
        return a > b ? (a > c ? a : c) : (b > c ? b : c);
    }

    static void requireNonEmpty(String name, String value) {
        if (value == null || value.isBlank()) {
            throw new IllegalArgumentException(name + " must not be empty");
        }
    }

    static int countBits(int n) {
        int count = 0;
        while (n != 0) {
            n &= n - 1;
            count++;
        }
        return count;
    }

    static boolean allPositive(int... values) {
        for (int v : values) {
            if (v <= 0) {
                return false;
            }
        }
        return true;
    }
}
