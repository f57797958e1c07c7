from dataclasses import dataclass, field
from typing import Dict, List, Optional


@dataclass
class Item:
    name: str
    price: float
    tags: List[str] = field(default_factory=list)


class Inventory:
    """A small in-memory stock keeper."""

    def __init__(self, owner: str):
        self.owner = owner
        self.stock: Dict[str, int] = {}
        self.catalog: Dict[str, Item] = {}

    def add(self, item: Item, count: int = 1) -> None:
        self.catalog[item.name] = item
        self.stock[item.name] = self.stock.get(item.name, 0) + count

    def remove(self, name: str, count: int = 1) -> bool:
        have = self.stock.get(name, 0)
        if have < count:
            return False
        self.stock[name] = have - count
        return True

    def find(self, tag: str) -> List[Item]:
        return [it for it in self.catalog.values() if tag in it.tags]

    def total_value(self) -> float:
        total = 0.0
        for name, count in self.stock.items():
            total += self.catalog[name].price * count
        return total

    def cheapest(self) -> Optional[Item]:
        items = sorted(self.catalog.values(), key=lambda it: it.price)
        return items[0] if items else None

    def __repr__(self) -> str:
        return f"Inventory({self.owner!r}, {len(self.stock)} kinds)"
