-- wrk script: POST /api/external/budget-check with an API key and a site id from the
-- environment (SITEPULSE_KEY, SITEPULSE_SITE). Used by .ci/wrk-budget-check.sh.
wrk.method = "POST"
wrk.path = "/api/external/budget-check"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("SITEPULSE_KEY")
wrk.body = '{"siteId":"' .. os.getenv("SITEPULSE_SITE") .. '"}'

-- Report 4xx and 5xx answers (wrk counts them as status errors), so a run of 401s or 404s cannot pass for a fast one.

function done(summary, latency, requests)
  io.write(string.format("4xx/5xx responses: %d\n", summary.errors.status))
end
