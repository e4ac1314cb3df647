#!/usr/bin/env python3
"""selftest.py: checks the mock gateway's contract end to end (stdlib only).

Starts the given mockgw binary on a free loopback port with a temporary token
file, drives every endpoint, the usage formulas, the overrides, streaming, the
faults and the HTTP edge cases (keep-alive, pipelining, chunked bodies,
Expect: 100-continue, a 5 MB body), then stops it with SIGTERM and expects
exit status 0. Usage: selftest.py [path/to/mockgw [extra mockgw args...]]
Exit status: 0 if every check passed, 1 otherwise.
"""
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

TOKEN = "selftest-token"
AUTH = {"Authorization": "Bearer " + TOKEN}
ANTH = dict(AUTH, **{"anthropic-version": "2023-06-01"})
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what)


class Gw:
    def __init__(self, argv):
        self.tok = tempfile.NamedTemporaryFile("w", delete=False)
        self.tok.write(TOKEN + "\n")
        self.tok.close()
        self.p = subprocess.Popen(argv + ["--listen", "127.0.0.1:0",
                                          "--token-file", self.tok.name],
                                  stdout=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()
        check(line.startswith("mockgw listening on 127.0.0.1:"), "banner: %r" % line)
        self.port = int(line.strip().rsplit(":", 1)[1])

    def conn(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=20)

    def req(self, method, path, body=None, headers=None, conn=None):
        c = conn or self.conn()
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        if not conn:
            c.close()
        return r, data

    def json(self, method, path, body=None, headers=None):
        r, data = self.req(method, path, body, headers)
        return r.status, json.loads(data), r

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        rc = self.p.wait(timeout=10)
        os.unlink(self.tok.name)
        return rc


def raw(port, data, wait=1.0, shut=False):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(data)
    if shut:
        s.shutdown(socket.SHUT_WR)
    s.settimeout(wait)
    out = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                return out, "eof"
            out += d
    except socket.timeout:
        return out, "timeout"
    except ConnectionResetError:
        return out, "reset"
    finally:
        s.close()


def sse(data):
    """Returns the list of (event, data) of an SSE body."""
    out = []
    for block in data.decode().split("\n\n"):
        if not block.strip():
            continue
        ev, d = None, None
        for line in block.split("\n"):
            if line.startswith("event: "):
                ev = line[7:]
            elif line.startswith("data: "):
                d = line[6:]
        out.append((ev, d))
    return out


def chat_body(text, **kw):
    b = {"model": "gpt-4o", "messages": [{"role": "user", "content": text}]}
    b.update(kw)
    return b


def test_basics(g):
    st, j, _ = g.json("GET", "/health")
    check(st == 200 and j == {"ok": True}, "health")
    st, j, _ = g.json("GET", "/v1/models")
    check(st == 401 and j["error"]["code"] == "invalid_token"
          and j["error"]["type"] == "authentication_error"
          and j["error"]["message"] == "invalid service token", "401 shape")
    st, j, _ = g.json("GET", "/v1/models", headers={"Authorization": "Bearer nope"})
    check(st == 401, "wrong token")
    st, j, _ = g.json("GET", "/v1/models", headers=AUTH)
    ids = [m["id"] for m in j["data"]]
    check(st == 200 and j["object"] == "list" and "slow-model" in ids
          and j["data"][0]["owned_by"] == "mockgw"
          and j["data"][0]["created"] == 1700000000, "models")
    st, j, _ = g.json("GET", "/v1/nothing", headers=AUTH)
    check(st == 404 and "error" in j, "404")
    st, j, _ = g.json("POST", "/v1/chat/completions", "{nope", AUTH)
    check(st == 400 and "error" in j, "malformed JSON chat")
    st, j, _ = g.json("POST", "/v1/messages", "[1,2", ANTH)
    check(st == 400 and j["type"] == "error", "malformed JSON messages")


def test_chat(g):
    body = {"model": "gpt-4o", "messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "hello"},
                                     {"type": "text", "text": "world!"}]}]}
    st, j, _ = g.json("POST", "/v1/chat/completions", body, AUTH)
    u = j["usage"]
    check(st == 200 and j["object"] == "chat.completion"
          and j["id"].startswith("chatcmpl-mock-") and j["model"] == "gpt-4o",
          "chat envelope")
    check(j["choices"][0]["message"]["content"] == "mock reply to: hello\nworld!"
          and j["choices"][0]["finish_reason"] == "stop", "chat content")
    check(u["prompt_tokens"] == 10 + (8 + 5 + 6) // 4 and u["completion_tokens"] == 20
          and u["total_tokens"] == u["prompt_tokens"] + 20
          and u["prompt_tokens_details"]["cached_tokens"] == 0
          and u["completion_tokens_details"]["reasoning_tokens"] == 0, "chat usage")
    st, j, _ = g.json("POST", "/v1/chat/completions",
                      chat_body("x" * 100, max_completion_tokens=7), AUTH)
    check(j["usage"]["completion_tokens"] == 7
          and j["choices"][0]["message"]["content"] == "mock reply to: " + "x" * 64,
          "cap and truncation")
    st, j, _ = g.json("POST", "/v1/chat/completions", chat_body("é" * 40), AUTH)
    check(j["choices"][0]["message"]["content"] == "mock reply to: " + "é" * 32,
          "UTF-8 safe truncation")
    st, j, _ = g.json("POST", "/v1/chat/completions", chat_body("hi"),
                      dict(AUTH, **{"x-mock-usage": "prompt=100,completion=50,cached=40,reasoning=7"}))
    u = j["usage"]
    check((u["prompt_tokens"], u["completion_tokens"], u["total_tokens"],
           u["prompt_tokens_details"]["cached_tokens"],
           u["completion_tokens_details"]["reasoning_tokens"]) == (100, 50, 150, 40, 7),
          "x-mock-usage")
    st, j, _ = g.json("POST", "/v1/chat/completions",
                      chat_body("hi", mock_usage={"cached": 3}), AUTH)
    check(j["usage"]["prompt_tokens_details"]["cached_tokens"] == 3
          and j["usage"]["prompt_tokens"] == 10, "mock_usage body")
    st, j, _ = g.json("POST", "/v1/chat/completions", chat_body("hi"),
                      dict(AUTH, **{"x-mock-usage": "bogus=1"}))
    check(st == 400, "bad x-mock-usage")
    st, j, _ = g.json("POST", "/v1/chat/completions",
                      chat_body("hi\nUSAGE: prompt=9223372036854775807,completion=-5"), AUTH)
    u = j["usage"]
    check((u["prompt_tokens"], u["completion_tokens"], u["total_tokens"])
          == (9223372036854775807, -5, 9223372036854775802), "USAGE: line")
    st, j, _ = g.json("POST", "/v1/chat/completions", chat_body("hi\nUSAGE: completion=9"),
                      dict(AUTH, **{"x-mock-usage": "completion=4"}))
    check(j["usage"]["completion_tokens"] == 4, "x-mock-usage over USAGE: line")
    st, j, _ = g.json("POST", "/v1/chat/completions",
                      chat_body("USAGE: prompt=99999999999999999999"), AUTH)
    check(st == 400, "bad USAGE: line")

    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}},
             {"type": "function", "function": {"name": "other"}}]
    st, j, _ = g.json("POST", "/v1/chat/completions",
                      chat_body('where?\nARGS: {"city": "Paris", "n": [1, 2]}', tools=tools), AUTH)
    m = j["choices"][0]["message"]
    tc = m["tool_calls"][0]
    check(m["content"] is None and j["choices"][0]["finish_reason"] == "tool_calls"
          and tc["type"] == "function" and tc["id"].startswith("call_mock_")
          and tc["function"]["name"] == "get_weather"
          and tc["function"]["arguments"] == '{"city":"Paris","n":[1,2]}', "tool call")
    st, j, _ = g.json("POST", "/v1/chat/completions", chat_body("no args", tools=tools), AUTH)
    check(j["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] == "{}",
          "tool call default args")
    body = chat_body("q", tools=tools)
    body["messages"] += [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"}]
    st, j, _ = g.json("POST", "/v1/chat/completions", body, AUTH)
    check(j["choices"][0]["message"]["content"] == "tool said: sunny"
          and j["choices"][0]["finish_reason"] == "stop", "tool result echo")


def test_chat_stream(g):
    r, data = g.req("POST", "/v1/chat/completions",
                    chat_body("hello there friend", stream=True,
                              stream_options={"include_usage": True}), AUTH)
    ev = sse(data)
    check(r.getheader("Content-Type") == "text/event-stream", "chat stream type")
    check(ev[-1] == (None, "[DONE]"), "chat stream [DONE]")
    chunks = [json.loads(d) for _, d in ev[:-1]]
    check(chunks[0]["choices"][0]["delta"].get("role") == "assistant", "first delta role")
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    check(text == "mock reply to: hello there friend", "streamed text %r" % text)
    check(all(len(c["choices"][0]["delta"].get("content", "").encode()) <= 8
              for c in chunks if c["choices"]), "pieces of <= 8 bytes")
    check(chunks[-2]["choices"][0]["finish_reason"] == "stop", "stream finish")
    check(chunks[-1]["choices"] == [] and chunks[-1]["usage"]["prompt_tokens"] == 14,
          "stream usage chunk")
    r, data = g.req("POST", "/v1/chat/completions",
                    chat_body('ARGS: {"a":"b"}', stream=True,
                              tools=[{"type": "function", "function": {"name": "f"}}]), AUTH)
    chunks = [json.loads(d) for _, d in sse(data)[:-1]]
    first = chunks[0]["choices"][0]["delta"]["tool_calls"][0]
    check(first["index"] == 0 and first["function"] == {"name": "f", "arguments": ""}
          and first["id"].startswith("call_mock_"), "stream tool first delta")
    args = "".join(c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
                   for c in chunks[1:-1])
    check(args == '{"a":"b"}' and chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
          and "usage" not in chunks[-1], "stream tool args")


def test_messages(g):
    body = {"model": "claude-sonnet-4", "max_tokens": 100,
            "system": [{"type": "text", "text": "sys!", "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hello claude"}]}]}
    st, j, _ = g.json("POST", "/v1/messages", body, AUTH)
    check(st == 400 and j["type"] == "error"
          and j["error"]["type"] == "invalid_request_error", "anthropic-version required")
    st, j, _ = g.json("POST", "/v1/messages?beta=true", body, ANTH)
    check(st == 200 and j["type"] == "message" and j["id"].startswith("msg_mock_")
          and j["content"] == [{"type": "text", "text": "mock reply to: hello claude"}]
          and j["stop_reason"] == "end_turn" and j["stop_sequence"] is None
          and j["usage"] == {"input_tokens": 10 + (4 + 12) // 4, "output_tokens": 20,
                             "cache_read_input_tokens": 0,
                             "cache_creation_input_tokens": 0}, "messages basic")
    st, j, _ = g.json("POST", "/v1/messages/count_tokens", body, ANTH)
    check(st == 200 and j == {"input_tokens": 14}, "count_tokens")
    st, j, _ = g.json("POST", "/v1/messages", dict(body, mock_usage={
        "prompt": 5, "cached": 900, "completion": 3}), ANTH)
    check(j["usage"] == {"input_tokens": 5, "output_tokens": 3, "cache_read_input_tokens": 900,
                         "cache_creation_input_tokens": 0}, "messages override")
    tools = [{"name": "Bash", "input_schema": {"type": "object"}}]
    b2 = dict(body, tools=tools, max_tokens=5,
              messages=[{"role": "user", "content": 'run\nARGS: {"command": "ls"}'}])
    st, j, _ = g.json("POST", "/v1/messages", b2, ANTH)
    c = j["content"][0]
    check(c["type"] == "tool_use" and c["name"] == "Bash" and c["input"] == {"command": "ls"}
          and c["id"].startswith("toolu_mock_") and j["stop_reason"] == "tool_use"
          and j["usage"]["output_tokens"] == 5, "tool_use")
    b3 = dict(b2, messages=b2["messages"] + [
        {"role": "assistant", "content": [dict(c)]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": c["id"],
                                      "content": [{"type": "text", "text": "a.txt b.txt"}]}]}])
    st, j, _ = g.json("POST", "/v1/messages", b3, ANTH)
    check(j["content"] == [{"type": "text", "text": "tool said: a.txt b.txt"}],
          "tool_result echo")

    r, data = g.req("POST", "/v1/messages", dict(body, stream=True), ANTH)
    ev = sse(data)
    names = [e for e, _ in ev]
    check(names[:3] == ["message_start", "content_block_start", "ping"]
          and names[-3:] == ["content_block_stop", "message_delta", "message_stop"],
          "anthropic event order %r" % names)
    check(all(json.loads(d)["type"] == e for e, d in ev), "event type matches data")
    start = json.loads(ev[0][1])["message"]
    check(start["usage"]["input_tokens"] == 14 and start["usage"]["output_tokens"] == 1,
          "message_start usage")
    text = "".join(json.loads(d)["delta"]["text"] for e, d in ev if e == "content_block_delta")
    check(text == "mock reply to: hello claude", "anthropic streamed text")
    md = json.loads(ev[-2][1])
    check(md["delta"]["stop_reason"] == "end_turn" and md["usage"]["output_tokens"] == 20,
          "message_delta")
    r, data = g.req("POST", "/v1/messages", dict(b2, stream=True), ANTH)
    ev = sse(data)
    cb = json.loads(ev[1][1])["content_block"]
    pj = "".join(json.loads(d)["delta"]["partial_json"] for e, d in ev
                 if e == "content_block_delta")
    check(cb["type"] == "tool_use" and cb["input"] == {} and json.loads(pj) == {"command": "ls"},
          "streamed tool_use")


def test_faults(g):
    b = chat_body("hello there friend")
    for where in ("header", "model"):
        def go(fault, path="/v1/chat/completions", body=b, headers=AUTH):
            body = dict(body)
            h = dict(headers)
            if where == "header":
                h["x-mock-fault"] = fault
            else:
                body["model"] = "gpt-x-fault-" + fault
            return g.req("POST", path, body, h)
        r, d = go("500")
        check(r.status == 500 and "error" in json.loads(d), "500 " + where)
        r, d = go("500", "/v1/messages", {"model": "c", "messages": []}, ANTH)
        check(r.status == 500 and json.loads(d)["type"] == "error", "500 anthropic " + where)
        r, d = go("429")
        check(r.status == 429 and r.getheader("Retry-After") == "1", "429 " + where)
        r, d = go("overflow")
        check(r.status == 400 and json.loads(d) == {"error": {
            "message": "This model's maximum context length is 200000 tokens. However, "
                       "your messages resulted in 250000 tokens.",
            "type": "invalid_request_error", "param": "messages",
            "code": "context_length_exceeded"}}, "overflow " + where)
        r, d = go("overflow", "/v1/messages", {"model": "c", "messages": []}, ANTH)
        j = json.loads(d)
        check(r.status == 400 and j["error"]["type"] == "invalid_request_error"
              and "prompt is too long" in j["error"]["message"], "overflow anthropic")
        r, d = go("malformed")
        check(r.status == 200 and d == b'{"id": "broken', "malformed " + where)
        t = time.time()
        r, d = go("delay-300")
        check(r.status == 200 and time.time() - t >= 0.3, "delay " + where)
        try:
            go("reset")
            check(False, "reset " + where)
        except (ConnectionError, http.client.HTTPException):
            pass
        try:
            go("cut")
            check(False, "cut " + where)
        except http.client.IncompleteRead:
            pass
        t = time.time()
        r, d = go("trickle-100")
        check(r.status == 200 and json.loads(d)["object"] == "chat.completion"
              and time.time() - t >= 0.2, "trickle " + where)
    r, d = g.req("POST", "/v1/chat/completions", b, dict(AUTH, **{"x-mock-fault": "nope"}))
    check(r.status == 400, "unknown fault")
    r, d = g.req("POST", "/v1/chat/completions", dict(b, model="default-model"), AUTH)
    check(r.status == 200, "'default-model' is not a fault")
    t = time.time()
    r, d = g.req("POST", "/v1/chat/completions", dict(b, model="slow-model"), AUTH)
    check(r.status == 200 and time.time() - t >= 3.0, "slow-model")

    # a cut stream: headers and some events, then EOF without the end
    req = json.dumps(chat_body("hello there friend", stream=True)).encode()
    out, how = raw(g.port, b"POST /v1/chat/completions HTTP/1.1\r\nAuthorization: Bearer "
                   + TOKEN.encode() + b"\r\nx-mock-fault: cut\r\nContent-Length: %d\r\n\r\n"
                   % len(req) + req)
    check(how == "eof" and b"data: " in out and b"[DONE]" not in out
          and not out.endswith(b"0\r\n\r\n"), "stream cut")
    t = time.time()
    r, d = g.req("POST", "/v1/messages",
                 {"model": "c-fault-trickle-50", "stream": True,
                  "messages": [{"role": "user", "content": "hi"}]}, ANTH)
    check(sse(d)[-1][0] == "message_stop" and time.time() - t >= 0.3, "stream trickle")

    # the leak faults: the gateway's own URL and token in the error text
    url = "http://127.0.0.1:%d" % g.port
    secret = "Authorization: Bearer " + TOKEN
    r, d = g.req("POST", "/v1/chat/completions", dict(b, model="x-fault-leak"), AUTH)
    m = json.loads(d)["error"]["message"]
    check(r.status == 400 and url + "/v1/chat/completions" in m and secret in m, "leak openai")
    r, d = g.req("POST", "/v1/messages/count_tokens", dict(b, model="c-fault-leak"), ANTH)
    j = json.loads(d)
    check(r.status == 400 and j["type"] == "error" and url in j["error"]["message"]
          and secret in j["error"]["message"], "leak count_tokens")
    r, d = g.req("POST", "/v1/messages", dict(b, model="c-fault-error-event"), ANTH)
    check(r.status == 500 and secret in json.loads(d)["error"]["message"], "error-event plain")
    r, d = g.req("POST", "/v1/messages", dict(b, model="c-fault-error-event", stream=True), ANTH)
    ev = sse(d)
    check(ev[0][0] == "message_start" and ev[-1][0] == "error"
          and json.loads(ev[-1][1])["error"]["type"] == "overloaded_error"
          and url in ev[-1][1] and secret in ev[-1][1]
          and "message_stop" not in [e for e, _ in ev], "error-event anthropic stream")
    r, d = g.req("POST", "/v1/chat/completions", dict(b, model="x-fault-error-event",
                                                      stream=True), AUTH)
    ev = sse(d)
    check(r.status == 200 and "choices" in json.loads(ev[0][1]) and len(ev) >= 2
          and secret in json.loads(ev[-1][1])["error"]["message"]
          and all(dd != "[DONE]" for _, dd in ev), "error-event openai stream")

    # cut-<n>: the first n events; nousage: no usage anywhere
    out, how = raw(g.port, b"POST /v1/chat/completions HTTP/1.1\r\nAuthorization: Bearer "
                   + TOKEN.encode() + b"\r\nx-mock-fault: cut-2\r\nContent-Length: %d\r\n\r\n"
                   % len(req) + req)
    check(how == "eof" and out.count(b"data: ") == 2, "stream cut-2")
    out, how = raw(g.port, b"POST /v1/chat/completions HTTP/1.1\r\nAuthorization: Bearer "
                   + TOKEN.encode() + b"\r\nx-mock-fault: cut-0\r\nContent-Length: %d\r\n\r\n"
                   % len(req) + req)
    check(how == "eof" and b" 200 " in out and b"data: " not in out, "stream cut-0")
    r, d = g.req("POST", "/v1/chat/completions", dict(b, model="m-fault-nousage"), AUTH)
    j = json.loads(d)
    check(r.status == 200 and "usage" not in j and j["choices"], "nousage chat")
    r, d = g.req("POST", "/v1/chat/completions",
                 dict(b, model="m-fault-nousage", stream=True,
                      stream_options={"include_usage": True}), AUTH)
    check(b'"usage"' not in d and b"[DONE]" in d, "nousage chat stream")
    msg = {"model": "c-fault-nousage", "max_tokens": 9, "messages": [{"role": "user", "content": "hi"}]}
    r, d = g.req("POST", "/v1/messages", msg, ANTH)
    j = json.loads(d)
    check(r.status == 200 and "usage" not in j and j["content"], "nousage messages")
    r, d = g.req("POST", "/v1/messages", dict(msg, stream=True), ANTH)
    check(b'"usage"' not in d and sse(d)[-1][0] == "message_stop", "nousage messages stream")

    # pieces-<n>: n text pieces; lockstep: each piece waits for GET /v1/_ack?n=N
    r, d = g.req("POST", "/v1/messages", dict(msg, model="c-fault-pieces-40", stream=True), ANTH)
    check([e for e, _ in sse(d)].count("content_block_delta") == 40, "pieces-40 messages")
    r, d = g.req("POST", "/v1/chat/completions",
                 dict(b, model="m-fault-pieces-7", stream=True), AUTH)
    check(len(sse(d)) == 7 + 3, "pieces-7 chat")
    st, before, _ = g.json("GET", "/v1/_lockstep", headers=AUTH)
    check(st == 200 and set(before) == {"streams", "acked", "missed"}, "lockstep stats")
    st, _, _ = g.json("GET", "/v1/_ack?n=x", headers=AUTH)
    check(st == 400, "ack without a number")
    acks = []

    def acker():
        for n in (1, 2, 3):
            time.sleep(0.2)
            acks.append(g.json("GET", "/v1/_ack?n=%d" % n, headers=AUTH)[0])
    th = threading.Thread(target=acker)
    th.start()
    r, d = g.req("POST", "/v1/messages", dict(msg, model="c-fault-lockstep", stream=True), ANTH)
    th.join()
    st, after, _ = g.json("GET", "/v1/_lockstep", headers=AUTH)
    check(sse(d)[-1][0] == "message_stop" and acks == [200, 200, 200]
          and after == {"streams": before["streams"] + 1, "acked": before["acked"] + 3,
                        "missed": before["missed"]}, "lockstep %r %r" % (before, after))


def test_upstream_errors(g):
    """The faults of issue 30: 429-<s>, overloaded, 529, retry-after-<s>,
    first-<k>, error-event-<kind>, error-first-<kind>."""
    cb = chat_body("hello there friend")
    mb = {"model": "c", "max_tokens": 50, "messages": [{"role": "user", "content": "hello"}]}
    oa_over = {"message": "The server is overloaded or not ready yet.",
               "type": "server_error", "param": None, "code": "server_is_overloaded"}
    an_over = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}

    def go(path, body, fault):
        h = dict(ANTH if path == "/v1/messages" else AUTH, **{"x-mock-fault": fault})
        r, d = g.req("POST", path, body, h)
        return r, d

    r, d = go("/v1/chat/completions", cb, "429-7")
    check(r.status == 429 and r.getheader("Retry-After") == "7"
          and json.loads(d)["error"]["code"] == "rate_limit_exceeded", "429-7 chat")
    r, d = go("/v1/messages", mb, "429-0")
    check(r.status == 429 and r.getheader("Retry-After") == "0"
          and json.loads(d)["error"]["type"] == "rate_limit_error", "429-0 messages")
    r, d = go("/v1/chat/completions", cb, "overloaded")
    check(r.status == 503 and r.getheader("Retry-After") is None
          and json.loads(d) == {"error": oa_over}, "overloaded chat")
    r, d = go("/v1/messages", mb, "overloaded")
    check(r.status == 529 and r.getheader("Retry-After") is None
          and json.loads(d) == an_over, "overloaded messages")
    r, d = go("/v1/chat/completions", cb, "overloaded,retry-after-5")
    check(r.status == 503 and r.getheader("Retry-After") == "5", "overloaded retry-after")
    r, d = go("/v1/chat/completions", cb, "529")
    j = json.loads(d)
    check(r.status == 529 and j["error"]["type"] == "overloaded_error"
          and "choices" not in j, "529 chat")
    r, d = go("/v1/messages", mb, "529")
    check(r.status == 529 and json.loads(d) == an_over, "529 messages")
    r, d = g.req("POST", "/v1/chat/completions", dict(cb, model="m-fault-529"), AUTH)
    check(r.status == 529, "529 in a model name")
    for bad in ("429-x", "error-event-nope", "error-first-", "first-", "retry-after-"):
        r, d = go("/v1/chat/completions", cb, bad)
        check(r.status == 400 and json.loads(d)["error"]["code"] == "invalid_fault",
              "unknown fault " + bad)

    # first-<k>: the faults apply to the first k requests of the same fault string
    tag = "first-2,429-3,delay-%d" % (os.getpid() % 7)
    st = [go("/v1/chat/completions", cb, tag)[0].status for _ in range(4)]
    check(st == [429, 429, 200, 200], "first-2: %r" % st)
    st = [go("/v1/chat/completions", cb, tag + ",trickle-0")[0].status for _ in range(2)]
    check(st == [429, 429], "first-2 counts per fault string: %r" % st)
    model = "m-fault-overloaded,first-1"
    st = [g.req("POST", "/v1/messages", dict(mb, model=model), ANTH)[0].status
          for _ in range(3)]
    check(st == [529, 200, 200], "first-1 in a model name: %r" % st)

    kinds = {
        "overflow": (400, "invalid_request_error", "context_length_exceeded",
                     "prompt is too long: 250000 tokens > 200000 maximum",
                     "This model's maximum context length is 200000 tokens."),
        "429": (429, "rate_limit_error", "rate_limit_exceeded", "mock gateway rate limit",
                "mock gateway rate limit"),
        "overloaded": (529, "overloaded_error", "server_is_overloaded", "Overloaded",
                       "The server is overloaded or not ready yet."),
    }
    full_m = sse(go("/v1/messages", dict(mb, stream=True), "none")[1])
    full_c = sse(go("/v1/chat/completions", dict(cb, stream=True), "none")[1])
    for kind, (an_status, an_type, oa_code, an_msg, oa_msg) in kinds.items():
        oa_type = {"overloaded": "server_error"}.get(kind, an_type)
        for first in (False, True):
            fault = ("error-first-" if first else "error-event-") + kind
            r, d = go("/v1/messages", dict(mb, stream=True), fault)
            ev = sse(d)
            kept = ev[:-1]
            err = json.loads(ev[-1][1])
            check(r.status == 200 and ev[-1][0] == "error"
                  and err == {"type": "error", "error": {"type": an_type, "message": an_msg}}
                  and [e for e, _ in kept]
                  == ([] if first else [e for e, _ in full_m[:len(full_m) // 2]]),
                  fault + " messages stream: %r" % ev[-2:])
            r, d = go("/v1/chat/completions", dict(cb, stream=True), fault)
            ev = sse(d)
            err = json.loads(ev[-1][1])["error"]
            check(r.status == 200 and err["code"] == oa_code and err["type"] == oa_type
                  and err["message"].startswith(oa_msg)
                  and len(ev) - 1 == (0 if first else len(full_c) // 2)
                  and all("choices" in json.loads(dd) for _, dd in ev[:-1])
                  and b"[DONE]" not in d, fault + " chat stream: %r" % ev[-2:])
            # not streamed: the plain refusal of that kind
            r, d = go("/v1/messages", mb, fault)
            check(r.status == an_status and json.loads(d)["error"]["type"] == an_type,
                  fault + " messages plain")
            r, d = go("/v1/chat/completions", cb, fault)
            j = json.loads(d)["error"]
            check(r.status == {"overloaded": 503}.get(kind, an_status)
                  and j["code"] == oa_code and j["type"] == oa_type
                  and (r.getheader("Retry-After") == "1") == (kind == "429"),
                  fault + " chat plain")


def post(g, path, body, fault=None):
    """POST body; fault goes in x-mock-fault. Returns (status, parsed JSON or
    the list of SSE (event, parsed data or raw string))."""
    h = dict(ANTH if path.startswith("/v1/messages") else AUTH)
    if fault:
        h["x-mock-fault"] = fault
    r, d = g.req("POST", path, body, h)
    if r.getheader("Content-Type") != "text/event-stream":
        return r.status, json.loads(d)
    out = []
    for ev, dd in sse(d):
        try:
            out.append((ev, json.loads(dd)))
        except ValueError:
            out.append((ev, dd))
    return r.status, out


def chat_text(chunks, index=0):
    return "".join(c["choices"][0]["delta"].get("content") or "" for _, c in chunks
                   if isinstance(c, dict) and c.get("choices")
                   and c["choices"][0]["index"] == index)


def usage_chunks(chunks):
    return [c["usage"] for _, c in chunks if isinstance(c, dict) and "usage" in c]


def msg_body(model="c", text="hi", **kw):
    b = {"model": model, "max_tokens": 100, "messages": [{"role": "user", "content": text}]}
    b.update(kw)
    return b


def test_n(g):
    CH = "/v1/chat/completions"
    st, j = post(g, CH, chat_body("hi", n=3))
    check(st == 200 and [c["index"] for c in j["choices"]] == [0, 1, 2]
          and all(c["message"]["content"] == "mock reply to: hi" for c in j["choices"])
          and j["usage"]["completion_tokens"] == 60, "n=3 chat")
    st, j = post(g, CH, chat_body("hi", n=2, max_tokens=5))
    check(j["usage"]["completion_tokens"] == 10 and len(j["choices"]) == 2, "n=2 capped")
    st, ev = post(g, CH, chat_body("hi", n=2, stream=True,
                                   stream_options={"include_usage": True}))
    u = usage_chunks(ev)
    check(chat_text(ev, 0) == chat_text(ev, 1) == "mock reply to: hi"
          and len(u) == 1 and u[0]["completion_tokens"] == 40
          and ev[-2][1]["choices"] == [] and ev[-1][1] == "[DONE]", "n=2 stream")
    for bad in (0, -1, "2", 1.5, 129):
        st, j = post(g, CH, chat_body("hi", n=bad))
        check(st == 400 and "n must be" in j["error"]["message"], "bad n %r" % (bad,))
    st, j = post(g, CH, chat_body("hi", n=None))
    check(st == 200 and len(j["choices"]) == 1, "n null")


def test_greedy(g):
    CH, MS = "/v1/chat/completions", "/v1/messages"
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    for fault, model in (("greedy", "gpt-4o"), (None, "m-fault-greedy")):
        st, j = post(g, CH, chat_body("hi", model=model, max_tokens=1000,
                                      max_completion_tokens=10, tools=tools), fault)
        c = j["choices"][0]["message"]["content"]
        check(st == 200 and len(c.encode()) == 1000 and c.startswith("mock reply to: hi")
              and j["usage"]["completion_tokens"] == 1000, "greedy larger cap %s" % model)
    st, j = post(g, CH, chat_body("hi", n=2, max_completion_tokens=300), "greedy")
    check([len(c["message"]["content"]) for c in j["choices"]] == [300, 300]
          and j["usage"]["completion_tokens"] == 600, "greedy n=2")
    st, j = post(g, CH, chat_body("hi"), "greedy")
    check(len(j["choices"][0]["message"]["content"]) == 30000
          and j["usage"]["completion_tokens"] == 30000, "greedy uncapped")
    st, j = post(g, CH, chat_body("hi", model="x-fault-greedy-500"))
    check(len(j["choices"][0]["message"]["content"]) == 500
          and j["usage"]["completion_tokens"] == 500, "greedy-500 uncapped")
    st, j = post(g, CH, chat_body("hi", max_tokens=7), "greedy-500")
    check(j["choices"][0]["message"]["content"] == "mock re"
          and j["usage"]["completion_tokens"] == 7, "greedy-500 capped at 7")
    st, ev = post(g, CH, chat_body("hi", stream=True, stream_options={"include_usage": True}),
                  "greedy")
    pieces = [len(c["choices"][0]["delta"].get("content", "")) for _, c in ev
              if isinstance(c, dict) and c.get("choices")]
    check(len(chat_text(ev)) == 30000 and max(pieces) == 512 and len(ev) <= 30000 // 512 + 5
          and usage_chunks(ev)[0]["completion_tokens"] == 30000, "greedy stream")
    st, j = post(g, MS, msg_body("c-fault-greedy", max_tokens=700, tools=[{"name": "t"}]))
    check(j["content"][0]["type"] == "text" and len(j["content"][0]["text"]) == 700
          and j["usage"]["output_tokens"] == 700, "greedy messages")
    st, ev = post(g, MS, msg_body("c-fault-greedy", max_tokens=1200, stream=True))
    text = "".join(d["delta"]["text"] for e, d in ev if e == "content_block_delta")
    md = [d for e, d in ev if e == "message_delta"][0]
    check(len(text) == 1200 and md["usage"]["output_tokens"] == 1200, "greedy messages stream")
    # greedy with pieces-<n>: the reply in n pieces of equal size, not padded
    st, ev = post(g, MS, msg_body("c-fault-greedy-fault-pieces-3", max_tokens=1000, stream=True))
    sizes = [len(d["delta"]["text"]) for e, d in ev if e == "content_block_delta"]
    check(sizes == [334, 334, 332], "greedy pieces-3 messages stream")
    st, ev = post(g, CH, chat_body("hi", stream=True, max_tokens=5000), "greedy,pieces-1")
    check(len(chat_text(ev)) == 5000 and len([c for _, c in ev if isinstance(c, dict)
          and c.get("choices") and c["choices"][0]["delta"].get("content")]) == 1,
          "greedy pieces-1 chat stream")
    st, j = post(g, MS, msg_body("c", max_tokens=200000000), "greedy")
    check(st == 400, "greedy cap too large")
    # two faults in one model name, and a model name with a header
    st, j = post(g, CH, chat_body("hi", model="m-fault-greedy-fault-reasoning-500",
                                  max_tokens=1000))
    u = j["usage"]
    check(st == 200 and u["completion_tokens"] == 1000
          and u["completion_tokens_details"]["reasoning_tokens"] == 500
          and len(j["choices"][0]["message"]["content"]) == 1000, "greedy + reasoning")
    st, j = post(g, CH, chat_body("hi", model="m-fault-greedy", max_tokens=40), "usage-strings")
    check(j["usage"]["completion_tokens"] == "40", "model fault + header fault")
    st, j = post(g, CH, chat_body("hi", model="m-fault-greedy-fault-nope"))
    check(st == 400, "unknown second fault in a model name")


def test_input_faults(g):
    CH, MS = "/v1/chat/completions", "/v1/messages"
    b = chat_body("x" * 1000, model="m-fault-bytetok")
    st, j = post(g, CH, b)
    check(j["usage"]["prompt_tokens"] == len(json.dumps(b).encode()), "bytetok chat")
    m = msg_body("c-fault-bytetok", "y" * 999, system="s" * 50, mystery={"a": 1})
    st, j = post(g, MS, m)
    check(j["usage"]["input_tokens"] == len(json.dumps(m).encode()), "bytetok messages")
    st, j = post(g, MS + "/count_tokens", m)
    check(j == {"input_tokens": len(json.dumps(m).encode())}, "bytetok count_tokens")
    st, j = post(g, CH, chat_body("hello", model="m-fault-zero-input"))
    check(j["usage"]["prompt_tokens"] == 0 and j["usage"]["total_tokens"] == 20, "zero-input chat")
    st, j = post(g, MS, msg_body("c-fault-zero-input", "x" * 4000))
    check(j["usage"]["input_tokens"] == 0 and j["usage"]["output_tokens"] == 20,
          "zero-input messages")
    st, ev = post(g, MS, msg_body("c-fault-zero-input", "x" * 4000, stream=True))
    start = ev[0][1]["message"]["usage"]
    md = [d for e, d in ev if e == "message_delta"][0]
    check(start["input_tokens"] == 0 and md["usage"] == {"output_tokens": 20},
          "zero-input messages stream")
    st, j = post(g, CH, chat_body("hi", model="m-fault-reasoning-70"))
    u = j["usage"]
    check(u["completion_tokens"] == 90 and u["completion_tokens_details"]["reasoning_tokens"] == 70
          and u["total_tokens"] == u["prompt_tokens"] + 90, "reasoning chat")
    st, ev = post(g, CH, chat_body("hi", model="m-fault-reasoning-70", stream=True,
                                   stream_options={"include_usage": True}))
    u = usage_chunks(ev)[0]
    check(u["completion_tokens"] == 90 and u["completion_tokens_details"]["reasoning_tokens"] == 70,
          "reasoning chat stream")
    st, j = post(g, MS, msg_body("c-fault-reasoning-70"))
    check(j["usage"]["output_tokens"] == 90, "reasoning messages")
    st, ev = post(g, MS, msg_body("c-fault-reasoning-70", stream=True))
    md = [d for e, d in ev if e == "message_delta"][0]
    check(md["usage"]["output_tokens"] == 90, "reasoning messages stream")


def shaped_ok(shape, u, names):
    """names: the normal names of the counts that must be in u."""
    if shape == "usage-null":
        return u is None
    if shape == "usage-empty":
        return u == {}
    if shape == "usage-renamed":
        return not any(k in u for k in names) and all(isinstance(v, (int, dict))
                                                      for v in u.values())
    want = str if shape == "usage-strings" else float

    def leaves(o):
        for v in o.values():
            if isinstance(v, dict):
                yield from leaves(v)
            else:
                yield v
    return all(k in u for k in names) and all(isinstance(v, want) for v in leaves(u))


def test_usage_shapes(g):
    CH, MS = "/v1/chat/completions", "/v1/messages"
    cn, mn = ("prompt_tokens", "completion_tokens"), ("input_tokens", "output_tokens")
    for shape in ("usage-strings", "usage-float", "usage-null", "usage-empty",
                  "usage-renamed"):
        st, j = post(g, CH, chat_body("hi", model="m-fault-" + shape))
        check(st == 200 and "usage" in j and shaped_ok(shape, j["usage"], cn), shape + " chat")
        st, ev = post(g, CH, chat_body("hi", stream=True, stream_options={"include_usage": True}),
                      shape)
        u = usage_chunks(ev)
        check(len(u) == 1 and shaped_ok(shape, u[0], cn) and ev[-1][1] == "[DONE]",
              shape + " chat stream")
        st, j = post(g, MS, msg_body("c-fault-" + shape))
        check(st == 200 and "usage" in j and shaped_ok(shape, j["usage"], mn),
              shape + " messages")
        st, ev = post(g, MS, msg_body("c-fault-" + shape, stream=True))
        start = ev[0][1]["message"]
        md = [d for e, d in ev if e == "message_delta"][0]
        check("usage" in start and shaped_ok(shape, start["usage"], mn)
              and "usage" in md and shaped_ok(shape, md["usage"], ("output_tokens",)),
              shape + " messages stream")
    st, j = post(g, CH, chat_body("hi", model="m-fault-usage-renamed"))
    check(j["usage"]["input_tokens"] == 10 and j["usage"]["output_tokens"] == 20,
          "usage-renamed chat names")
    st, j = post(g, MS, msg_body("c-fault-usage-renamed"))
    check(j["usage"]["prompt_tokens"] == 10 and j["usage"]["completion_tokens"] == 20,
          "usage-renamed messages names")
    r, d = g.req("POST", CH, chat_body("hi", model="m-fault-usage-float"), AUTH)
    check(b'"prompt_tokens":10.0' in d, "usage-float on the wire: %r" % d[-200:])


def test_stream_order(g):
    CH, MS = "/v1/chat/completions", "/v1/messages"
    st, ev = post(g, CH, chat_body("hi", model="m-fault-early-usage,pieces-375", stream=True,
                                   stream_options={"include_usage": True}))
    u = usage_chunks(ev)
    check(len(u) == 1 and "usage" in ev[0][1] and u[0]["prompt_tokens"] == 10
          and u[0]["completion_tokens"] == 0 and len(chat_text(ev)) == 3000
          and ev[-1][1] == "[DONE]" and ev[-2][1]["choices"][0]["finish_reason"] == "stop",
          "early-usage")
    st, ev = post(g, CH, chat_body("hi", stream=True, stream_options={"include_usage": True}),
                  "after-delta")
    check("usage" in ev[-3][1] and len(ev[-2][1]["choices"][0]["delta"]["content"]) == 1000
          and ev[-1][1] == "[DONE]", "after-delta chat")
    st, ev = post(g, MS, msg_body("c-fault-after-delta", stream=True))
    names = [e for e, _ in ev]
    check(names[-3:] == ["message_delta", "content_block_delta", "message_stop"]
          and len(ev[-2][1]["delta"]["text"]) == 1000
          and ev[-2][1]["delta"]["text"].startswith("late"), "after-delta messages")


def first_and_last(g, body, fault):
    """Streams body over a raw socket: (seconds to the first bytes, to EOF)."""
    req = json.dumps(body).encode()
    s = socket.create_connection(("127.0.0.1", g.port))
    t = time.time()
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nAuthorization: Bearer " + TOKEN.encode()
              + b"\r\nConnection: close\r\nx-mock-fault: " + fault.encode()
              + b"\r\nContent-Length: %d\r\n\r\n" % len(req) + req)
    s.settimeout(20)
    first, out = None, b""
    while True:
        d = s.recv(65536)
        if first is None:
            first = time.time() - t
        if not d:
            break
        out += d
    s.close()
    return first, time.time() - t, out


def test_slow(g):
    body = chat_body("hi", stream=True, stream_options={"include_usage": True})
    first, last, out = first_and_last(g, body, "stall-800")
    check(first < 0.4 and last >= 0.8 and b"[DONE]" in out, "stall stream %.2f %.2f"
          % (first, last))
    t = time.time()
    st, j = post(g, "/v1/chat/completions", chat_body("hi"), "stall-300")
    check(st == 200 and j["usage"]["completion_tokens"] == 20 and time.time() - t >= 0.3,
          "stall non-stream")
    first, last, out = first_and_last(
        g, dict(body, max_tokens=2048, n=2),
        "greedy,trickle-30,usage-strings,after-delta,reasoning-5,bytetok,stall-200")
    check(b"[DONE]" in out and b'"completion_tokens":"4096"' in out
          and b'"reasoning_tokens":"5"' in out and last >= 0.2 + 0.03 * 10,
          "trickle + greedy + usage-strings + after-delta + stall")
    t = time.time()
    st, ev = post(g, "/v1/messages", msg_body("c-fault-trickle-20-fault-zero-input-fault-"
                                              "early-usage", stream=True))
    check(ev[0][1]["message"]["usage"]["input_tokens"] == 0 and ev[-1][0] == "message_stop"
          and time.time() - t >= 0.1, "trickle + zero-input messages")


def test_http(g):
    c = g.conn()
    for i in range(5):
        r, d = g.req("POST", "/v1/chat/completions", chat_body("ka %d" % i), AUTH, conn=c)
        check(r.status == 200, "keep-alive %d" % i)
    sock = c.sock
    r, d = g.req("GET", "/v1/models", None, AUTH, conn=c)
    check(c.sock is sock, "same connection reused")
    c.close()

    body = json.dumps(chat_body("chunked body")).encode()
    c = g.conn()
    c.putrequest("POST", "/v1/chat/completions")
    c.putheader("Authorization", "Bearer " + TOKEN)
    c.putheader("Transfer-Encoding", "chunked")
    c.putheader("Expect", "100-continue")
    c.endheaders()
    for i in range(0, len(body), 7):
        piece = body[i:i + 7]
        c.send(b"%x\r\n%s\r\n" % (len(piece), piece))
    c.send(b"0\r\n\r\n")
    r = c.getresponse()
    j = json.loads(r.read())
    check(j["choices"][0]["message"]["content"] == "mock reply to: chunked body", "chunked")
    c.close()

    big = "y" * (5 * 1024 * 1024)
    st, j, _ = g.json("POST", "/v1/chat/completions", chat_body(big), AUTH)
    check(st == 200 and j["usage"]["prompt_tokens"] == 10 + len(big) // 4, "5 MB body")

    a = b"Authorization: Bearer " + TOKEN.encode() + b"\r\n"
    p = json.dumps(chat_body("pipe")).encode()
    out, how = raw(g.port, b"GET /health HTTP/1.1\r\n\r\nPOST /v1/chat/completions HTTP/1.1\r\n"
                   + a + b"Content-Length: %d\r\n\r\n" % len(p) + p
                   + b"GET /health HTTP/1.1\r\nConnection: close\r\n\r\n")
    check(out.count(b"HTTP/1.1 200 OK") == 3 and how == "eof", "pipelining + close")
    out, how = raw(g.port, b"GET /health HTTP/1.0\r\n\r\n")
    check(out.startswith(b"HTTP/1.1 200") and how == "eof", "HTTP/1.0 closes")
    out, how = raw(g.port, b"BROKEN\r\n\r\n")
    check(out.startswith(b"HTTP/1.1 400") and how == "eof", "bad request line")
    out, how = raw(g.port, b"GET /health HTTP/1.1\r\nX: " + b"a" * 70000 + b"\r\n\r\n")
    check(out.startswith(b"HTTP/1.1 431"), "huge head")

    g.req("POST", "/v1/messages?beta=true", {"model": "m", "messages": [], "k": [1]},
          dict(ANTH, **{"X-Trace": "t1"}))
    st, j, _ = g.json("GET", "/v1/_last", headers=AUTH)
    check(st == 200 and j["path"] == "/v1/messages" and j["query"] == "beta=true"
          and j["headers"]["x-trace"] == "t1" and j["headers"]["anthropic-version"]
          and j["body"] == {"model": "m", "messages": [], "k": [1]}, "_last")
    st, j, _ = g.json("GET", "/v1/_last")
    check(st == 401, "_last needs auth")


def main():
    argv = sys.argv[1:] or [os.path.join(os.path.dirname(os.path.abspath(__file__)), "mockgw")]
    g = Gw(argv)
    try:
        for t in (test_basics, test_chat, test_chat_stream, test_messages, test_faults,
                  test_upstream_errors, test_n, test_greedy, test_input_faults, test_usage_shapes,
                  test_stream_order, test_slow, test_http):
            try:
                t(g)
            except Exception as e:  # a crash of one group must not hide the others
                check(False, "%s raised %r" % (t.__name__, e))
    finally:
        rc = g.stop()
    check(rc == 0, "exit status after SIGTERM: %s" % rc)
    print("mockgw selftest: %s" % ("ok" if failures == 0 else "%d failure(s)" % failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
