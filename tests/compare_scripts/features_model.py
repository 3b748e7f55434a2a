"""A user's ordinary script: pandas groupby/merge features, a scikit-learn model, metrics printed,
predictions written. Nothing in it knows about accel or the GPU."""

import argparse

import numpy as np
import pandas as pd
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split

parser = argparse.ArgumentParser()
parser.add_argument("--rows", type=int, default=20_000)
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()

rng = np.random.default_rng(args.seed)
n = args.rows
flights = pd.DataFrame(
    {
        "carrier": rng.choice(["AA", "B6", "DL", "UA", "WN"], n),
        "origin": rng.choice(["EWR", "JFK", "LGA"], n),
        "hour": rng.integers(5, 23, n),
        "distance": rng.gamma(2.0, 500.0, n).round(0),
    }
)
flights["delayed"] = ((flights["hour"] > 16) ^ (rng.random(n) < 0.25)).astype(int)
route = flights.groupby(["origin", "carrier"], as_index=False).agg(route_mean_distance=("distance", "mean"))
flights = flights.merge(route, on=["origin", "carrier"], how="left")
flights["hour_share"] = flights.groupby("hour")["distance"].transform("count") / n
X = pd.get_dummies(flights.drop(columns=["delayed"]), columns=["carrier", "origin"], dtype=float)
y = flights["delayed"]
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=args.seed)

print(f"rows {len(flights)} features {X.shape[1]}")
print(f"mean distance by origin: {flights.groupby('origin')['distance'].mean().round(3).to_dict()}")
logreg = LogisticRegression(max_iter=500).fit(X_train, y_train)
print(f"logistic regression AUC {roc_auc_score(y_test, logreg.predict_proba(X_test)[:, 1]):.4f}")
forest = RandomForestClassifier(n_estimators=30, max_depth=8, random_state=args.seed, n_jobs=-1).fit(X_train, y_train)
proba = forest.predict_proba(X_test)[:, 1]
print(f"random forest AUC {roc_auc_score(y_test, proba):.4f}")
pd.DataFrame({"proba": proba}).to_csv("predictions.csv", index=False)
