import java.util.*;
import java.util.stream.Collectors;

public class Inventory<T extends Comparable<? super T>> {
    private final String owner;
    private final Map<T, Integer> stock = new HashMap<>();
    private int operations;

    public Inventory(String owner) {
        this.owner = owner;
    }

    public void add(T item, int count) {
        stock.merge(item, count, Integer::sum);
        operations++;
    }

    public boolean remove(T item, int count) {
        int have = stock.getOrDefault(item, 0);
        if (have < count) {
            return false;
        }
        stock.put(item, have - count);
        this.operations += 1;
        return true;
    }

    @SafeVarargs
    public final List<T> inStock(T... wanted) {
        return Arrays.stream(wanted)
                .filter(w -> stock.getOrDefault(w, 0) > 0)
                .sorted()
                .collect(Collectors.toList());
    }

    public Optional<T> mostStocked() {
        return stock.entrySet().stream()
                .max(Map.Entry.comparingByValue())
                .map(Map.Entry::getKey);
    }

    @Override
    public String toString() {
        return "Inventory(" + owner + ", " + stock.size() + " kinds, " + operations + " ops)";
    }
}
