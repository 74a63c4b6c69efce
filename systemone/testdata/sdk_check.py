"""The official System One client (typesafe-sdk, unmodified) against a gojev server.

Run by systemone's TestOfficialSDK with TYPESAFE_BASE_URL pointing at the server, which accepts
the key in TYPESAFE_API_KEY only, and JEV_N_CTX its n_ctx. Prints one "ok ..." line a check and
exits 1 at the first failure (an exception's traceback says which).
"""

import concurrent.futures
import json
import math
import os
import sys

import httpx2
import typesafe_sdk
from typesafe_sdk import Choice, Noul, Score, TypeSafeClient

BASE = os.environ["TYPESAFE_BASE_URL"]
KEY = os.environ["TYPESAFE_API_KEY"]
N_CTX = int(os.environ["JEV_N_CTX"])

STATE = {"channel": "email", "message": "I was charged twice for my March invoice. Please refund one."}
QUESTIONS = {
    "billing": Noul(instructions="Is this message about billing?"),
    "spam": Noul(instructions="This message is unsolicited advertising.",
                 criteria={"true": "Unsolicited advertising", "false": "A customer's own request"}),
    "team": Choice(instructions="Which team should handle this ticket?",
                   criteria={"billing": "Charges, refunds and invoices.", "shipping": "Parcels and deliveries.",
                             "account": None}),
    "urgency": Score(instructions="How urgent is this message?",
                     criteria=["Can wait", "Needs attention this week", {"level": "today", "note": "money at stake"}]),
}


def check(name, cond, detail=""):
    if not cond:
        print(f"FAIL {name}: {detail}", flush=True)
        sys.exit(1)
    print(f"ok {name}", flush=True)


def close(a, b):
    return abs(a - b) < 1e-6


def check_answers(r):
    check("model", isinstance(r.model, str) and r.model != "", r.model)
    check("usage", isinstance(r.usage.input_tokens, int) and r.usage.input_tokens > 0 and r.usage.output_tokens >= 4, r.usage)
    check("every question answered", set(r.answers) == set(QUESTIONS), list(r.answers))
    for name in ("billing", "spam"):
        n = r.nouls[name]
        check(f"noul {name} in [0, 1]", 0 <= n.noul <= 1, n.noul)
    c = r.choices["team"]
    check("choice probabilities sum to 1", close(sum(c.probabilities.values()), 1), c.probabilities)
    check("choice keys are the criteria", set(c.probabilities) == {"billing", "shipping", "account"}, c.probabilities)
    check("choice is the argmax", c.probabilities[c.choice] == max(c.probabilities.values()), c)
    k = len(c.probabilities)
    want = (max(c.probabilities.values()) - 1 / k) / (1 - 1 / k)
    check("choice confidence is the normalised margin over uniform", close(c.confidence, want), (c.confidence, want))
    s = r.scores["urgency"]
    check("score legend echoes the levels as sent", s.legend == {0: "Can wait", 1: "Needs attention this week",
                                                                 2: {"level": "today", "note": "money at stake"}}, s.legend)
    check("score probabilities sum to 1", close(sum(s.probabilities.values()), 1), s.probabilities)
    check("score is the expected level", close(s.score, sum(i * p for i, p in s.probabilities.items())), s)
    check("score confidence in [0, 1]", 0 <= s.confidence <= 1, s.confidence)


with TypeSafeClient(timeout=120) as client:
    models = client.models.list()
    names = [m.name for m in models.models]
    check("models list the model file, then jev-latest and the jev-<version> aliases", names[1:] == ["jev-latest", "jev-1.13", "jev-1.13.0"] and names[0].endswith(".gguf"), names)

    r = client.system_one(state=STATE, questions=QUESTIONS)
    check_answers(r)
    raw = r.raw_http_response.json() if hasattr(r, "raw_http_response") else None
    if raw is not None:
        check("answers carry prompt_version", raw["answers"]["team"]["prompt_version"] == "direct-options-v1"
              and raw["answers"]["billing"]["prompt_version"] == "noul-v1", raw["answers"])

    # A state of a string, and a 4 KiB one: the SDK sends bodies of 1 KiB and more zstd-compressed.
    r = client.system_one(state="I was charged twice. Please help.", questions={"b": Noul(instructions="Billing?")})
    check("a string state", 0 <= r.nouls["b"].noul <= 1)
    long_state = {"message": "Refund please. " * 80}  # 1.2 KiB: the SDK compresses it
    r = client.system_one(state=long_state, questions={"b": Noul(instructions="Billing?")})
    check("a compressed body (zstd) is read", 0 <= r.nouls["b"].noul <= 1)

    # Concurrent requests: every one answered.
    def one(i):
        return client.system_one(state={"message": f"Order {i}: the parcel never arrived."},
                                 questions={"team": QUESTIONS["team"], "late": Noul(instructions="Is a delivery late?")})

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(one, range(24)))
    check("24 concurrent requests answered", all(set(x.answers) == {"team", "late"} for x in results))

    # Errors, as the API returns them.
    try:
        client.system_one(state=STATE, questions={"where": typesafe_sdk.Box(instructions="Find the logo.")})
        check("box refused", False, "no error")
    except typesafe_sdk.TypeSafeUnprocessableEntityError as e:
        check("a box question is a 422 saying so", e.status == 422 and "box" in str(e), str(e))
    try:
        client.system_one(state={"message": "x " * (N_CTX * 2)}, questions={"b": Noul(instructions="Billing?")})
        check("too long refused", False, "no error")
    except typesafe_sdk.TypeSafeUnprocessableEntityError as e:
        check("a state longer than n_ctx is a 422 naming the limit", str(N_CTX) in str(e), str(e))
    try:
        client.system_one(state={"message": "y" * (2 << 20)}, questions={"b": Noul(instructions="Billing?")})
        check("huge body refused", False, "no error")
    except typesafe_sdk.TypeSafeAPIError as e:
        check("a body over the limit is a 413", e.status == 413, str(e))

with TypeSafeClient(model="no-such-model", timeout=120) as other:
    try:
        other.system_one(state=STATE, questions={"b": Noul(instructions="Billing?")})
        check("unknown model refused", False, "no error")
    except typesafe_sdk.TypeSafeNotFoundError as e:
        check("an unknown model is a 404", e.status == 404, str(e))

with TypeSafeClient(api_key="wrong-key", timeout=120) as wrong:
    try:
        wrong.models.list()
        check("wrong key refused", False, "no error")
    except typesafe_sdk.TypeSafeAuthenticationError as e:
        check("a wrong key is a 401", e.status == 401, str(e))

# A request the SDK would not build: a missing field, sent as raw JSON.
resp = httpx2.post(BASE + "/v1/systemone", headers={"Authorization": "Bearer " + KEY},
                   json={"model": "jev-latest", "questions": {"b": {"type": "score", "criteria": []}}})
body = resp.json()
locs = [tuple(d["loc"]) for d in body.get("detail", [])]
check("a missing field is a 422 with FastAPI's detail", resp.status_code == 422
      and ("body", "state") in locs and ("body", "questions", "b", "score", "criteria") in locs, body)
print("all checks passed")
