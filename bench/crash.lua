-- crash.lua: the wrk script of bench/crash.sh. The same request as chat.lua
-- (model and key from BENCH_MODEL, BENCH_KEY); every 2xx answer is counted
-- and its x-request-id appended to CRASH_IDS_DIR/ids-N (one file per wrk
-- thread), so that the script can check each answered request against the
-- ledger. The done hook prints one BENCH line like chat.lua's.

local model = os.getenv("BENCH_MODEL") or "gpt-4o-mini"
local key = os.getenv("BENCH_KEY") or "sk-prov-none"
local dir = os.getenv("CRASH_IDS_DIR") or "/tmp"

wrk.method = "POST"
wrk.path = "/v1/chat/completions"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. key
wrk.body = '{"model":"' .. model .. '","messages":[{"role":"user",' ..
           '"content":"Say hello in five words."}],"max_tokens":16}'

local threads = {}
local counter = 0

function setup(thread)
   counter = counter + 1
   thread:set("n", counter)
   table.insert(threads, thread)
end

function init(args)
   ok2xx = 0
   non2xx = 0
   noid = 0
   ids = io.open(dir .. "/ids-" .. n, "w")
   ids:setvbuf("line")     -- on disk as it comes, whatever happens to wrk
end

function response(status, headers, body)
   if status >= 200 and status < 300 then
      ok2xx = ok2xx + 1
      local id = headers["x-request-id"] or headers["X-Request-Id"]
      if id then
         ids:write(id, "\n")
      else
         noid = noid + 1
      end
   else
      non2xx = non2xx + 1
   end
end

function done(summary, latency, requests)
   local bad, good, missing = 0, 0, 0
   for _, t in ipairs(threads) do
      bad = bad + t:get("non2xx")
      good = good + t:get("ok2xx")
      missing = missing + t:get("noid")
   end
   local e = summary.errors
   io.write(string.format(
      "BENCH requests=%d duration_us=%d ok2xx=%d non2xx=%d noid=%d " ..
      "connect=%d read=%d write=%d timeout=%d\n",
      summary.requests, summary.duration, good, bad, missing, e.connect, e.read, e.write,
      e.timeout))
end
