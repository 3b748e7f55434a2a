"""Small realistic tables for the bring-your-own-table tests, generated (nothing downloaded)."""

from __future__ import annotations

import numpy as np
import pandas as pd


def customers(n: int = 600, seed: int = 0) -> pd.DataFrame:
    """A churn-like table: numeric, low- and high-cardinality categoricals, booleans as text,
    dates as text, an ID column and free text; ``churned`` depends on several of them."""
    rng = np.random.default_rng(seed)
    plan = rng.choice(["basic", "plus", "pro"], size=n, p=[0.5, 0.3, 0.2])
    city = rng.choice([f"city{i:02d}" for i in range(60)], size=n)
    age = rng.integers(18, 80, size=n).astype(float)
    age[rng.random(n) < 0.05] = np.nan
    spend = rng.gamma(2.0, 30.0, size=n)
    support_calls = rng.poisson(1.5, size=n)
    autopay = rng.choice(["yes", "no"], size=n)
    signup = pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 1000, size=n), unit="D")
    city_effect = {c: e for c, e in zip(sorted(set(city)), rng.normal(0, 1, 60))}
    logit = (
        -1.5
        + 1.2 * (plan == "basic")
        + 0.8 * support_calls
        - 0.02 * spend
        + 1.5 * (autopay == "no")
        + 1.5 * np.array([city_effect[c] for c in city])
    )
    churned = np.where(rng.random(n) < 1 / (1 + np.exp(-logit)), "yes", "no")
    return pd.DataFrame(
        {
            "customer_id": np.arange(100000, 100000 + n),
            "plan": plan,
            "city": city,
            "age": age,
            "monthly_spend": spend.round(2),
            "support_calls": support_calls,
            "autopay": autopay,
            "signup_date": signup.strftime("%Y-%m-%d"),
            "notes": [f"customer note {i} {rng.integers(1e9)}" for i in range(n)],
            "churned": churned,
        }
    )


def house_prices(n: int = 500, seed: int = 1) -> pd.DataFrame:
    """A regression table: price from size, rooms, a neighbourhood and the year built."""
    rng = np.random.default_rng(seed)
    size = rng.uniform(40, 250, n)
    rooms = rng.integers(1, 7, n)
    hood = rng.choice(["north", "south", "east", "west", "centre"], n)
    year = rng.integers(1950, 2020, n)
    price = 2000 * size + 15000 * rooms + np.where(hood == "centre", 80000, 0) + 300 * (year - 1950)
    price = price + rng.normal(0, 20000, n)
    return pd.DataFrame(
        {"size_m2": size.round(1), "rooms": rooms, "neighbourhood": hood, "year_built": year, "price": price.round(0)}
    )


def iris_like(n: int = 450, seed: int = 2) -> pd.DataFrame:
    """Three classes separated by two numeric features (multiclass)."""
    rng = np.random.default_rng(seed)
    species = rng.choice(["setosa", "versicolor", "virginica"], n)
    centre = {"setosa": (1.0, 0.2), "versicolor": (4.3, 1.3), "virginica": (5.5, 2.0)}
    x = np.array([centre[s] for s in species]) + rng.normal(0, 0.45, (n, 2))
    return pd.DataFrame({"petal_length": x[:, 0], "petal_width": x[:, 1], "species": species})


def shop_orders(n: int = 4000, seed: int = 5) -> pd.DataFrame:
    """A table for the cluster tests: missing values everywhere, a date column as text, a
    categorical column of 300 values (target-encoded across partitions), a text boolean, and
    two targets: ``returned`` (yes/no, a few rows without it) and ``basket`` (a price)."""
    rng = np.random.default_rng(seed)
    shop = rng.choice([f"shop{i:03d}" for i in range(300)], size=n)
    effect = dict(zip(sorted(set(shop)), rng.normal(0, 1.2, 300), strict=False))
    channel = rng.choice(["web", "app", "store", "phone"], size=n, p=[0.4, 0.3, 0.2, 0.1])
    items = rng.poisson(3, size=n).astype(float)
    price = rng.gamma(2.0, 20.0, size=n)
    gift = rng.choice(["yes", "no"], size=n)
    day = pd.Timestamp("2022-01-01") + pd.to_timedelta(rng.integers(0, 700, size=n), unit="D")
    shop_effect = np.array([effect[s] for s in shop])
    logit = -0.5 + shop_effect + 0.3 * (channel == "web") - 0.01 * price + 0.6 * (gift == "yes") + 0.4 * (day.month >= 11)
    returned = np.where(rng.random(n) < 1 / (1 + np.exp(-logit)), "yes", "no").astype(object)
    basket = (items * price * (1 + 0.2 * shop_effect) + 5 * (channel == "store") + rng.normal(0, 10, n)).round(2)
    frame = pd.DataFrame(
        {
            "order_id": np.arange(n) + 500_000,
            "shop": shop.astype(object),
            "channel": channel.astype(object),
            "items": items,
            "price": price.round(2),
            "gift": gift.astype(object),
            "ordered": day.strftime("%Y-%m-%d").astype(object),
            "returned": returned,
            "basket": basket,
        }
    )
    for column, share in (("shop", 0.05), ("channel", 0.03), ("items", 0.08), ("price", 0.04), ("ordered", 0.02)):
        frame.loc[rng.random(n) < share, column] = None
    frame.loc[rng.random(n) < 0.02, "returned"] = None
    return frame


def customers_with_words(n: int = 700, seed: int = 0) -> pd.DataFrame:
    """:func:`customers` as exported by hand: 2% of ``monthly_spend`` a word (``unknown``, ``?``,
    ``n.a.``), some with spaces around the number, one ``1e400``, and ``age`` with one ``-`` in 50 rows; both
    are columns of numbers whose other values are read as missing."""
    frame = customers(n, seed)
    rng = np.random.default_rng(seed + 1)
    spend = frame["monthly_spend"].map(lambda v: f" {v} " if rng.random() < 0.1 else str(v)).astype(object)
    words = rng.random(n) < 0.02
    spend[words] = rng.choice(["unknown", "?", "n.a."], int(words.sum()))
    spend[3] = "1e400"  # a number beyond float64: missing, as an infinity is
    age = frame["age"].map(lambda v: None if np.isnan(v) else str(int(v))).astype(object)
    age[rng.random(n) < 0.02] = "-"
    return frame.assign(monthly_spend=spend, age=age)
