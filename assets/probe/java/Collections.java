package probe;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.stream.Collectors;

/** Generic collection code for the codescope probe corpus. */
public class Collections {
    static <T> List<T> flatten(List<List<T>> nested) {
        List<T> out = new ArrayList<>();
        for (List<T> sub : nested) {
            out.addAll(sub);
        }
        return out;
    }

    static <T> List<T> unique(List<T> items) {
        return new ArrayList<>(new LinkedHashSet<>(items));
    }

    static <T> List<List<T>> chunk(List<T> items, int size) {
        List<List<T>> chunks = new ArrayList<>();
        for (int i = 0; i < items.size(); i += size) {
            chunks.add(items.subList(i, Math.min(i + size, items.size())));
        }
        return chunks;
    }

    static <T, K> Map<K, List<T>> groupBy(List<T> items, Function<T, K> key) {
        Map<K, List<T>> groups = new HashMap<>();
        for (T item : items) {
            groups.computeIfAbsent(key.apply(item), k -> new ArrayList<>()).add(item);
        }
        return groups;
    }

    static <K, V> Map<V, K> invert(Map<K, V> map) {
        Map<V, K> out = new HashMap<>();
        for (Map.Entry<K, V> e : map.entrySet()) {
            out.put(e.getValue(), e.getKey());
        }
        return out;
    }

    static List<Map.Entry<String, Integer>> topK(Map<String, Integer> counts, int k) {
        return counts.entrySet().stream()
                .sorted(Map.Entry.<String, Integer>comparingByValue().reversed())
                .limit(k)
                .collect(Collectors.toList());
    }

    static List<Integer> squares(int n) {
        List<Integer> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(i * i);
        }
        return out;
    }

    static List<Integer> evenSquares(List<Integer> values) {
        return values.stream().filter(v -> v % 2 == 0).map(v -> v * v).collect(Collectors.toList());
    }

    static int binarySearch(int[] items, int target) {
        int lo = 0, hi = items.length - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (items[mid] == target) {
                return mid;
            } else if (items[mid] < target) {
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        return -1;
    }

    static void bubbleSort(int[] a) {
        for (int i = 0; i < a.length; i++) {
            for (int j = 0; j < a.length - i - 1; j++) {
                if (a[j] > a[j + 1]) {
                    int t = a[j];
                    a[j] = a[j + 1];
                    a[j + 1] = t;
                }
            }
        }
    }

    static int[] mergeSorted(int[] a, int[] b) {
        int[] out = new int[a.length + b.length];
        int i = 0, j = 0, k = 0;
        while (i < a.length && j < b.length) {
            out[k++] = a[i] <= b[j] ? a[i++] : b[j++];
        }
        while (i < a.length) {
            out[k++] = a[i++];
        }
        while (j < b.length) {
            out[k++] = b[j++];
        }
        return out;
    }

    static void quickSort(int[] a, int lo, int hi) {
        if (lo >= hi) {
            return;
        }
        int pivot = a[hi], p = lo;
        for (int i = lo; i < hi; i++) {
            if (a[i] < pivot) {
                int t = a[i];
                a[i] = a[p];
                a[p++] = t;
            }
        }
        a[hi] = a[p];
        a[p] = pivot;
        quickSort(a, lo, p - 1);
        quickSort(a, p + 1, hi);
    }

    static List<Integer> bfs(Map<Integer, List<Integer>> graph, int start) {
        List<Integer> order = new ArrayList<>();
        Set<Integer> seen = new HashSet<>();
        Deque<Integer> queue = new ArrayDeque<>();
        queue.add(start);
        seen.add(start);
        while (!queue.isEmpty()) {
            int node = queue.poll();
            order.add(node);
            for (int next : graph.getOrDefault(node, List.of())) {
                if (seen.add(next)) {
                    queue.add(next);
                }
            }
        }
        return order;
    }

    static void dfs(Map<Integer, List<Integer>> graph, int node, Set<Integer> seen) {
        if (!seen.add(node)) {
            return;
        }
        for (int next : graph.getOrDefault(node, List.of())) {
            dfs(graph, next, seen);
        }
    }

    static <T> Map<T, Integer> frequencies(List<T> items) {
        Map<T, Integer> freq = new HashMap<>();
        for (T item : items) {
            freq.put(item, freq.getOrDefault(item, 0) + 1);
        }
        return freq;
    }

    static <T> Set<T> intersection(Set<T> a, Set<T> b) {
        Set<T> out = new HashSet<>(a);
        out.retainAll(b);
        return out;
    }

    static <T> List<List<T>> partition(List<T> items, Predicate<T> pred) {
        List<T> yes = new ArrayList<>(), no = new ArrayList<>();
        for (T item : items) {
            (pred.test(item) ? yes : no).add(item);
        }
        return List.of(yes, no);
    }

    static <T extends Comparable<T>> T maxOf(List<T> items) {
        T best = null;
        for (T item : items) {
            if (best == null || item.compareTo(best) > 0) {
                best = item;
            }
        }
        return best;
    }

    static List<Integer> indexOfAll(List<String> items, String target) {
        List<Integer> out = new ArrayList<>();
        for (int i = 0; i < items.size(); i++) {
            if (items.get(i).equals(target)) {
                out.add(i);
            }
        }
        return out;
    }

    static <K, V> Map<K, V> zipToMap(List<K> keys, List<V> values) {
        Map<K, V> map = new HashMap<>();
        for (int i = 0; i < Math.min(keys.size(), values.size()); i++) {
            map.put(keys.get(i), values.get(i));
        }
        return map;
    }

    static List<String> sortByLength(List<String> words) {
        List<String> sorted = new ArrayList<>(words);
        sorted.sort(Comparator.comparingInt(String::length).thenComparing(Comparator.naturalOrder()));
        return sorted;
    }

    static Integer secondLargest(int[] values) {
        Integer first = null, second = null;
        for (int v : values) {
            if (first == null || v > first) {
                second = first;
                first = v;
            } else if (v != first && (second == null || v > second)) {
                second = v;
            }
        }
        return second;
    }

    static <T> List<T> rotate(List<T> items, int k) {
        int n = items.size();
        List<T> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            out.add(items.get(((i - k) % n + n) % n));
        }
        return out;
    }

    static int[] slidingMax(int[] values, int window) {
        int[] out = new int[Math.max(values.length - window + 1, 0)];
        for (int i = 0; i < out.length; i++) {
            int best = values[i];
            for (int j = i + 1; j < i + window; j++) {
                best = Math.max(best, values[j]);
            }
            out[i] = best;
        }
        return out;
    }

    static <T> List<T> reverse(List<T> items) {
        List<T> out = new ArrayList<>();
        for (int i = items.size() - 1; i >= 0; i--) {
            out.add(items.get(i));
        }
        return out;
    }

    static Map<String, Integer> cumulative(Map<String, Integer> counts) {
        Map<String, Integer> out = new java.util.TreeMap<>();
        int total = 0;
        for (String key : new java.util.TreeSet<>(counts.keySet())) {
            total += counts.get(key);
            out.put(key, total);
        }
        return out;
    }

    static String joinAll(List<?> items) {
        return items.stream().map(String::valueOf).collect(Collectors.joining(", ", "[", "]"));
    }

    static int sumPositive(List<Integer> values) {
        return values.stream().filter(v -> v > 0).mapToInt(Integer::intValue).sum();
    }

    static boolean containsDuplicate(int[] values) {
        Set<Integer> seen = new HashSet<>();
        for (int v : values) {
            if (!seen.add(v)) {
                return true;
            }
        }
        return false;
    }
}
