"""Classes and methods for the codescope probe corpus (methods are snippets too)."""


class Stack:
    def __init__(self):
        self.items = []

    def push(self, item):
        self.items.append(item)

    def pop(self):
        if not self.items:
            raise IndexError("pop from empty stack")
        return self.items.pop()

    def peek(self):
        return self.items[-1] if self.items else None

    def __len__(self):
        return len(self.items)


class Account:
    def __init__(self, owner, balance=0):
        self.owner = owner
        self.balance = balance
        self.history = []

    def deposit(self, amount):
        if amount <= 0:
            raise ValueError("amount must be positive")
        self.balance += amount
        self.history.append(("deposit", amount))

    def withdraw(self, amount):
        if amount > self.balance:
            raise ValueError("insufficient funds")
        self.balance -= amount
        self.history.append(("withdraw", amount))
        return self.balance

    def statement(self):
        lines = [f"{kind}: {amount}" for kind, amount in self.history]
        return "\n".join(lines)


class Vector:
    def __init__(self, x, y):
        self.x = x
        self.y = y

    def __add__(self, other):
        return Vector(self.x + other.x, self.y + other.y)

    def __mul__(self, k):
        return Vector(self.x * k, self.y * k)

    def length(self):
        return (self.x ** 2 + self.y ** 2) ** 0.5

    def __repr__(self):
        return f"Vector({self.x}, {self.y})"


class Inventory:
    def __init__(self):
        self.stock = {}

    def add(self, name, count=1):
        self.stock[name] = self.stock.get(name, 0) + count

    def remove(self, name, count=1):
        current = self.stock.get(name, 0)
        if count > current:
            return False
        self.stock[name] = current - count
        if self.stock[name] == 0:
            del self.stock[name]
        return True

    def total(self):
        return sum(self.stock.values())

    def low_stock(self, threshold=2):
        return [name for name, n in self.stock.items() if n <= threshold]


class Matrix:
    def __init__(self, rows):
        self.rows = rows

    def shape(self):
        return len(self.rows), len(self.rows[0]) if self.rows else 0

    def scale(self, factor):
        return Matrix([[v * factor for v in row] for row in self.rows])

    def trace(self):
        return sum(self.rows[i][i] for i in range(min(self.shape())))


class Node:
    def __init__(self, value, children=None):
        self.value = value
        self.children = children or []

    def depth(self):
        if not self.children:
            return 1
        return 1 + max(child.depth() for child in self.children)

    def walk(self):
        yield self.value
        for child in self.children:
            yield from child.walk()


class LRUCache:
    def __init__(self, capacity):
        self.capacity = capacity
        self.data = {}
        self.order = []

    def get(self, key):
        if key not in self.data:
            return None
        self.order.remove(key)
        self.order.append(key)
        return self.data[key]

    def put(self, key, value):
        if key in self.data:
            self.order.remove(key)
        elif len(self.data) >= self.capacity:
            oldest = self.order.pop(0)
            del self.data[oldest]
        self.data[key] = value
        self.order.append(key)


class Temperature:
    def __init__(self, celsius):
        self._celsius = celsius

    @property
    def fahrenheit(self):
        return self._celsius * 9 / 5 + 32

    @classmethod
    def from_fahrenheit(cls, f):
        return cls((f - 32) * 5 / 9)

    @staticmethod
    def is_freezing(celsius):
        return celsius <= 0


class Timer:
    def __init__(self, clock):
        self.clock = clock
        self.start = None
        self.elapsed = 0.0

    def __enter__(self):
        self.start = self.clock()
        return self

    def __exit__(self, exc_type, exc, tb):
        self.elapsed = self.clock() - self.start
        return False


class Queue:
    def __init__(self):
        self.front = []
        self.back = []

    def enqueue(self, item):
        self.back.append(item)

    def dequeue(self):
        if not self.front:
            while self.back:
                self.front.append(self.back.pop())
        return self.front.pop() if self.front else None


class Shape:
    def area(self):
        raise NotImplementedError

    def describe(self):
        return f"{type(self).__name__} with area {self.area():.2f}"


class Circle(Shape):
    def __init__(self, radius):
        self.radius = radius

    def area(self):
        return 3.14159 * self.radius * self.radius


class Rectangle(Shape):
    def __init__(self, width, height):
        self.width = width
        self.height = height

    def area(self):
        return self.width * self.height

    def is_square(self):
        return self.width == self.height
