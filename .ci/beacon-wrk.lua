-- wrk script of .ci/beacon-wrk.sh: a page view's beacon as the script sends it (five figures with
-- attribution), 50 paths, phone and desktop. ORIGIN and KEY come from the environment.
wrk.method = "POST"
wrk.headers["Origin"] = os.getenv("ORIGIN")
wrk.headers["Content-Type"] = "text/plain;charset=UTF-8"
local key = os.getenv("KEY")
local n = 0
request = function()
  n = n + 1
  local body = string.format('{"p":"/page-%d","d":"%s","nt":"navigate","m":[{"n":"ttfb","v":%d},{"n":"fcp","v":%d},' ..
    '{"n":"lcp","v":%d,"t":"img.hero","u":"https://example.com/hero-%d.jpg"},{"n":"cls","v":0.0%d,"t":"main>div.banner"},' ..
    '{"n":"inp","v":%d,"t":"button.plan-toggle","e":"click","i":4,"r":%d,"s":16}]}',
    n % 50, (n % 2 == 0) and "phone" or "desktop", 80 + n % 400, 600 + n % 2000, 1200 + n % 4000, n % 3, n % 9,
    60 + n % 500, math.floor((40 + n % 500) / 2))
  return wrk.format(nil, "/api/beacon/" .. key, nil, body)
end
done = function(summary, latency, requests)
  io.write(string.format("requests %d, non-2xx %d, %.0f beacons/s, p50 %.2f ms, p99 %.2f ms\n", summary.requests,
    summary.errors.status, summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000,
    latency:percentile(99) / 1000))
end
