package probe;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** Classes, constructors and methods for the codescope probe corpus. */
public class Objects {
    static class Stack<T> {
        private final List<T> items = new ArrayList<>();

        public void push(T item) {
            items.add(item);
        }

        public T pop() {
            if (items.isEmpty()) {
                throw new IllegalStateException("pop from empty stack");
            }
            return items.remove(items.size() - 1);
        }

        public Optional<T> peek() {
            return items.isEmpty() ? Optional.empty() : Optional.of(items.get(items.size() - 1));
        }

        public int size() {
            return items.size();
        }
    }

    static class Account {
        private final String owner;
        private double balance;
        private final List<String> history = new ArrayList<>();

        Account(String owner, double balance) {
            this.owner = owner;
            this.balance = balance;
        }

        void deposit(double amount) {
            if (amount <= 0) {
                throw new IllegalArgumentException("amount must be positive");
            }
            balance += amount;
            history.add("deposit " + amount);
        }

        double withdraw(double amount) {
            if (amount > balance) {
                throw new IllegalStateException("insufficient funds");
            }
            balance -= amount;
            history.add("withdraw " + amount);
            return balance;
        }

        String statement() {
            return owner + ": " + String.join(", ", history);
        }
    }

    static final class Vector {
        final double x;
        final double y;

        Vector(double x, double y) {
            this.x = x;
            this.y = y;
        }

        Vector plus(Vector other) {
            return new Vector(x + other.x, y + other.y);
        }

        Vector times(double k) {
            return new Vector(x * k, y * k);
        }

        double length() {
            return Math.sqrt(x * x + y * y);
        }

        @Override
        public boolean equals(Object o) {
            if (this == o) {
                return true;
            }
            if (!(o instanceof Vector)) {
                return false;
            }
            Vector v = (Vector) o;
            return Double.compare(x, v.x) == 0 && Double.compare(y, v.y) == 0;
        }

        @Override
        public int hashCode() {
            return 31 * Double.hashCode(x) + Double.hashCode(y);
        }

        @Override
        public String toString() {
            return "Vector(" + x + ", " + y + ")";
        }
    }

    static class Inventory {
        private final Map<String, Integer> stock = new HashMap<>();

        void add(String name, int count) {
            stock.merge(name, count, Integer::sum);
        }

        boolean remove(String name, int count) {
            int current = stock.getOrDefault(name, 0);
            if (count > current) {
                return false;
            }
            if (current == count) {
                stock.remove(name);
            } else {
                stock.put(name, current - count);
            }
            return true;
        }

        int total() {
            int sum = 0;
            for (int n : stock.values()) {
                sum += n;
            }
            return sum;
        }

        List<String> lowStock(int threshold) {
            List<String> low = new ArrayList<>();
            stock.forEach((name, n) -> {
                if (n <= threshold) {
                    low.add(name);
                }
            });
            return low;
        }
    }

    abstract static class Shape {
        abstract double area();

        String describe() {
            return getClass().getSimpleName() + " with area " + String.format("%.2f", area());
        }
    }

    static class Circle extends Shape {
        private final double radius;

        Circle(double radius) {
            this.radius = radius;
        }

        @Override
        double area() {
            return Math.PI * radius * radius;
        }
    }

    static class Rectangle extends Shape {
        private final double width, height;

        Rectangle(double width, double height) {
            this.width = width;
            this.height = height;
        }

        @Override
        double area() {
            return width * height;
        }

        boolean isSquare() {
            return width == height;
        }
    }

    static class LruCache<K, V> extends LinkedHashMap<K, V> {
        private final int capacity;

        LruCache(int capacity) {
            super(16, 0.75f, true);
            this.capacity = capacity;
        }

        @Override
        protected boolean removeEldestEntry(Map.Entry<K, V> eldest) {
            return size() > capacity;
        }
    }

    static class Node<T> {
        final T value;
        final List<Node<T>> children = new ArrayList<>();

        Node(T value) {
            this.value = value;
        }

        Node<T> add(Node<T> child) {
            children.add(child);
            return this;
        }

        int depth() {
            int best = 0;
            for (Node<T> child : children) {
                best = Math.max(best, child.depth());
            }
            return best + 1;
        }

        void collect(List<T> out) {
            out.add(value);
            for (Node<T> child : children) {
                child.collect(out);
            }
        }
    }

    static class Counter {
        private int count;

        synchronized int increment() {
            return ++count;
        }

        synchronized void reset() {
            count = 0;
        }
    }

    record Point(int x, int y) {
        Point {
            if (x < 0 || y < 0) {
                throw new IllegalArgumentException("negative coordinate");
            }
        }

        int manhattan(Point other) {
            return Math.abs(x - other.x) + Math.abs(y - other.y);
        }
    }

    enum Color {
        RED, GREEN, BLUE;

        Color next() {
            return values()[(ordinal() + 1) % values().length];
        }
    }

    static class Temperature {
        private final double celsius;

        Temperature(double celsius) {
            this.celsius = celsius;
        }

        static Temperature fromFahrenheit(double f) {
            return new Temperature((f - 32) * 5 / 9);
        }

        double fahrenheit() {
            return celsius * 9 / 5 + 32;
        }

        boolean isFreezing() {
            return celsius <= 0;
        }
    }

    static class Queue<T> {
        private final List<T> front = new ArrayList<>();
        private final List<T> back = new ArrayList<>();

        void enqueue(T item) {
            back.add(item);
        }

        T dequeue() {
            if (front.isEmpty()) {
                while (!back.isEmpty()) {
                    front.add(back.remove(back.size() - 1));
                }
            }
            return front.isEmpty() ? null : front.remove(front.size() - 1);
        }
    }
}
