-- anonflood.lua: the wrk script of bench/anonflood.sh's flood. One client
-- (every connection from 127.0.0.1) sends anonymous requests as fast as it
-- can: FLOOD_KIND=register (POST /oauth/register, a small public client) or
-- login (GET /v1/auth/flood/login, a sign-in start). The done hook prints
-- one line with how many were answered 2xx, 3xx, 429 and otherwise.
local kind = os.getenv("FLOOD_KIND") or "register"
if kind == "login" then
   wrk.method = "GET"
   wrk.path = "/v1/auth/" .. (os.getenv("FLOOD_PROVIDER") or "flood") .. "/login"
else
   wrk.method = "POST"
   wrk.path = "/oauth/register"
   wrk.headers["Content-Type"] = "application/json"
   wrk.body = '{"client_name":"flood","redirect_uris":["http://127.0.0.1:5173/cb"]}'
end

local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) s2, s3, s429, other = 0, 0, 0, 0 end

function response(status, headers, body)
   if status == 429 then s429 = s429 + 1
   elseif status >= 200 and status < 300 then s2 = s2 + 1
   elseif status >= 300 and status < 400 then s3 = s3 + 1
   else other = other + 1 end
end

function done(summary, latency, requests)
   local a, b, c, d = 0, 0, 0, 0
   for _, t in ipairs(threads) do
      a = a + t:get("s2"); b = b + t:get("s3"); c = c + t:get("s429"); d = d + t:get("other")
   end
   io.write(string.format("FLOOD %s requests=%d 2xx=%d 3xx=%d 429=%d other=%d\n", kind,
                          summary.requests, a, b, c, d))
end
