"""Writes a CSV, a Parquet file and a text file into its working folder; prints a checksum."""

import sys

import numpy as np
import pandas as pd

value = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
df = pd.DataFrame({"k": np.arange(100) % 7, "v": np.linspace(0.0, value, 100)})
agg = df.groupby("k", as_index=False)["v"].sum()
agg.to_csv("agg.csv", index=False)
agg.to_parquet("agg.parquet", index=False)
with open("notes.txt", "w") as f:
    f.write(f"value {value}\n")
print(f"sum {agg['v'].sum():.6f}")
