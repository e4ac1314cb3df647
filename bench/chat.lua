-- chat.lua: the wrk script of bench/run.sh. Every connection sends the same
-- small request, by default POST /v1/chat/completions (model and key from the
-- environment: BENCH_MODEL, BENCH_KEY; BENCH_KIND picks the request: chat,
-- chat-stream (stream:true with the usage chunk), messages-stream (POST
-- /v1/messages stream:true, the key as x-api-key) or responses-stream (POST
-- /v1/responses stream:true)); BENCH_UNCAPPED=1 leaves the output cap out of
-- the chat and responses requests (as Codex does: the service then forwards
-- the model's maximum, patched into the body); responses outside 2xx are
-- counted per thread;
-- the done hook prints one machine-readable line with the figures run.sh
-- tabulates (latencies in microseconds).

local model = os.getenv("BENCH_MODEL") or "gpt-4o-mini"
local key = os.getenv("BENCH_KEY") or "sk-prov-none"
local kind = os.getenv("BENCH_KIND") or "chat"
local say = '"messages":[{"role":"user","content":"Say hello in five words."}]'
local uncapped = os.getenv("BENCH_UNCAPPED") == "1"

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
if kind == "messages-stream" then
   wrk.path = "/v1/messages"
   wrk.headers["x-api-key"] = key
   wrk.headers["anthropic-version"] = "2023-06-01"
   wrk.body = '{"model":"' .. model .. '",' .. say .. ',"max_tokens":16,"stream":true}'
elseif kind == "responses-stream" then
   wrk.path = "/v1/responses"
   wrk.headers["Authorization"] = "Bearer " .. key
   wrk.body = '{"model":"' .. model .. '","input":"Say hello in five words.",' ..
              (uncapped and '' or '"max_output_tokens":16,') .. '"stream":true}'
else
   wrk.path = "/v1/chat/completions"
   wrk.headers["Authorization"] = "Bearer " .. key
   wrk.body = '{"model":"' .. model .. '",' .. say .. (uncapped and '' or ',"max_tokens":16') ..
              (kind == "chat-stream"
               and ',"stream":true,"stream_options":{"include_usage":true}}' or '}')
end

local threads = {}

function setup(thread)
   table.insert(threads, thread)
end

function init(args)
   non2xx = 0
   ok2xx = 0
end

function response(status, headers, body)
   if status >= 200 and status < 300 then
      ok2xx = ok2xx + 1
   else
      non2xx = non2xx + 1
   end
end

function done(summary, latency, requests)
   local bad, good = 0, 0
   for _, t in ipairs(threads) do
      bad = bad + t:get("non2xx")
      good = good + t:get("ok2xx")
   end
   local e = summary.errors
   io.write(string.format(
      "BENCH requests=%d duration_us=%d p50_us=%d p99_us=%d ok2xx=%d non2xx=%d " ..
      "connect=%d read=%d write=%d timeout=%d body_bytes=%d\n",
      summary.requests, summary.duration, latency:percentile(50),
      latency:percentile(99), good, bad, e.connect, e.read, e.write, e.timeout,
      #wrk.body))
end
