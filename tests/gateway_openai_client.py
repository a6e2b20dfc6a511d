"""Talks to Tackle's HTTP API with the official `openai` Python SDK, as any OpenAI client would.

Usage: gateway_openai_client.py BASE_URL TOKEN MODEL TASK
Prints one JSON object: the models listed, then a whole and a streamed completion of TASK
(each with its text, finish reason, usage and the `tackle` extras the SDK keeps).
"""

import json
import sys

from openai import OpenAI


def whole(client, model, task):
    r = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": task}]
    )
    choice = r.choices[0]
    return {
        "text": choice.message.content,
        "finish_reason": choice.finish_reason,
        "usage": r.usage.model_dump() if r.usage else None,
        "tackle": (r.model_extra or {}).get("tackle"),
    }


def streamed(client, model, task):
    text, events, finish, usage = [], [], None, None
    stream = client.chat.completions.create(
        model=model,
        messages=[
            {"role": "system", "content": "ignored: the agent has its own prompt"},
            {"role": "user", "content": [{"type": "text", "text": task + " (streamed)"}]},
        ],
        stream=True,
    )
    for chunk in stream:
        extra = (chunk.model_extra or {}).get("tackle")
        if extra:
            events.append(extra)
        for c in chunk.choices:
            if c.delta.content:
                text.append(c.delta.content)
            if c.finish_reason:
                finish = c.finish_reason
        if chunk.usage:
            usage = chunk.usage.model_dump()
    return {"text": "".join(text), "finish_reason": finish, "usage": usage, "events": events}


def main():
    base, token, model, task = sys.argv[1:5]
    client = OpenAI(base_url=base, api_key=token, max_retries=0, timeout=60)
    out = {
        "models": [m.id for m in client.models.list()],
        "whole": whole(client, model, task),
        "stream": streamed(client, model, task),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
