sealed interface Shape permits Circle, Rect {}

record Circle(double radius) implements Shape {}

record Rect(double width, double height) implements Shape {
    Rect {
        if (width < 0 || height < 0) {
            throw new IllegalArgumentException("negative size");
        }
    }
}

final class Shapes {
    static double area(Shape shape) {
        return switch (shape) {
            case Circle c -> Math.PI * c.radius() * c.radius();
            case Rect(double w, double h) -> w * h;
        };
    }

    static String describe(Object o) {
        if (o instanceof Shape s && area(s) > 10.0) {
            return "large shape";
        }
        String kind = """
            small or
            unknown""";
        return kind.strip();
    }

    static int sumAll(int... values) {
        int total = 0;
        outer:
        for (int v : values) {
            for (int i = 0; i < v; i++) {
                if (i > 100) break outer;
                total += i;
            }
        }
        return total;
    }
}
