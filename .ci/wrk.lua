-- wrk script for every SitePulse load scenario (.ci/load.sh, .ci/wrk-budget-check.sh). All from the
-- environment:
--   WRK_METHOD    GET (default) or POST
--   WRK_PATH      request path, e.g. /api/external/budget-check
--   WRK_BODY      request body (sent as application/json)
--   WRK_BODY_FILE a file whose content is the request body (for bodies too long for the environment)
--   WRK_HEADER    one more header, "Name: value" (e.g. x-lhci-build-token: ...)
--   WRK_BEARER    Authorization: Bearer token
--   WRK_COOKIE    Cookie header, e.g. session=...
--   WRK_BODIES    a file of "<hex signature> <body>" lines: each request POSTs the next body with
--                 x-platform-signature (the publish webhook); wrk's Lua has no HMAC, so
--                 `go run ./.ci/loadkit bodies` signs them beforehand. Use one wrk thread with it.
--   WRK_STOP_AFTER stop each thread after this many responses (wrk itself only knows durations,
--                 and still runs for all of -d, so requests/s is then computed from the time
--                 between the first request and the last counted response, read with `date`)
-- Every answer that is not 200 is counted and reported (wrk itself counts only 4xx and 5xx, so a
-- run of login redirects could otherwise pass for a fast one), and a last line sums the run up:
--   RESULT requests=... rps=... p50_ms=... p99_ms=... non200=... socket_errors=...

local method = os.getenv("WRK_METHOD") or "GET"
local path = os.getenv("WRK_PATH") or "/"
local body = os.getenv("WRK_BODY")
if os.getenv("WRK_BODY_FILE") then
  local f = assert(io.open(os.getenv("WRK_BODY_FILE"), "rb"))
  body = f:read("*a")
  f:close()
end
local stop_after = tonumber(os.getenv("WRK_STOP_AFTER") or "0")
local headers = {}
if body then headers["Content-Type"] = "application/json" end
if os.getenv("WRK_BEARER") then headers["Authorization"] = "Bearer " .. os.getenv("WRK_BEARER") end
if os.getenv("WRK_COOKIE") then headers["Cookie"] = os.getenv("WRK_COOKIE") end
if os.getenv("WRK_HEADER") then
  local name, value = os.getenv("WRK_HEADER"):match("^([^:]+):%s*(.*)$")
  headers[name] = value
end

local signed = {}
local bodies_file = os.getenv("WRK_BODIES")
if bodies_file then
  for line in io.lines(bodies_file) do
    local sig, b = line:match("^(%x+) (.*)$")
    if sig then signed[#signed + 1] = {sig, b} end
  end
  assert(#signed > 0, "no signed bodies in " .. bodies_file)
end

local threads = {}
function setup(thread)
  table.insert(threads, thread)
end

-- now_us reads the wall clock (wrk's Lua has none finer than a second); used twice per thread.
local function now_us()
  local f = io.popen("date +%s%6N")
  local t = tonumber(f:read("*l"))
  f:close()
  return t
end

local next_body = 0
local static_request
started = nil
function request()
  if stop_after > 0 and not started then started = now_us() end
  if #signed > 0 then
    local p = signed[(next_body % #signed) + 1]
    next_body = next_body + 1
    return wrk.format("POST", path, {["Content-Type"] = "application/json", ["x-platform-signature"] = p[1]}, p[2])
  end
  if not static_request then static_request = wrk.format(method, path, headers, body) end
  return static_request
end

responses = 0
non200 = 0
function response(status, hdrs, b)
  responses = responses + 1
  if status ~= 200 then non200 = non200 + 1 end
  if stop_after > 0 and responses == stop_after then
    elapsed_us = now_us() - started
    wrk.thread:stop()
  end
end

function done(summary, latency, requests)
  local bad, counted, elapsed = 0, 0, 0
  for _, t in ipairs(threads) do
    bad = bad + (t:get("non200") or 0)
    counted = counted + (t:get("responses") or 0)
    elapsed = math.max(elapsed, t:get("elapsed_us") or 0)
  end
  local e = summary.errors
  local n, secs = summary.requests, summary.duration / 1e6
  if stop_after > 0 then
    n = counted
    if elapsed > 0 then n, secs = stop_after * #threads, elapsed / 1e6 end
  end
  io.write(string.format("non-200 responses: %d (4xx/5xx: %d)\n", bad, e.status))
  io.write(string.format("RESULT requests=%d rps=%.0f p50_ms=%.2f p99_ms=%.2f non200=%d socket_errors=%d\n",
    n, n / secs,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, bad,
    e.connect + e.read + e.write + e.timeout))
end
