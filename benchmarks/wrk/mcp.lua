-- wrk script: replays one MCP 2026-07-28 Streamable HTTP request with its full headers.
--
-- usage: wrk ... -s mcp.lua URL -- REQUEST_FILE [MODE] [STOP_AFTER]
--   REQUEST_FILE  "Name: value" header lines, a blank line, then the JSON-RPC body
--                 (written by httpload.py: Content-Type, Accept, MCP-Protocol-Version,
--                 Mcp-Method, Mcp-Name, and a body whose params carry the full _meta)
--   MODE          "plain" (default): the same request again and again;
--                 "two_rounds": input_required round trips. Each input_required answer
--                 is queued; the next request retries it with inputResponses and the
--                 sealed requestState, so every round trip is two requests;
--                 "unique_ids": the same request with a new JSON-RPC id each time (1, 2,
--                 3, ...), as a handshake-era session needs: it refuses an id still in
--                 flight. Run with -t1, so one counter numbers every connection's requests.
--   STOP_AFTER    stop after this many responses (0 = run for the -d duration); prints
--                 BENCHSTOP, and the caller interrupts wrk (SIGINT) to end the run
-- done() prints one line: BENCHJSON {...} with counts and latency percentiles in us.

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

local ANSWER = '{"action":"accept","content":{"name":"Alice"}}'

function init(args)
  local file = assert(io.open(args[1], "rb"))
  local data = file:read("*a")
  file:close()
  local head, body = data:match("^(.-)\n\n(.*)$")
  local headers = {}
  for line in head:gmatch("[^\n]+") do
    local name, value = line:match("^([^:]+):%s*(.*)$")
    headers[name] = value
  end
  mode = args[2] or "plain"
  stop_after = tonumber(args[3] or "0")
  first = wrk.format("POST", wrk.path, headers, body)
  retry_headers = headers
  body_head = body:match('^(.-"params":{)')
  body_tail = body:sub(#body_head + 1)
  id_head, id_tail = body:match('^(.-"id":)%d+(.*)$')
  next_id = 0
  queue = {}
  seen, ok, asked, bad = 0, 0, 0, 0
  if mode ~= "two_rounds" and stop_after == 0 then
    response = nil -- wrk then skips parsing bodies entirely
  end
end

function request()
  if mode == "unique_ids" then
    next_id = next_id + 1
    return wrk.format("POST", wrk.path, retry_headers, id_head .. next_id .. id_tail)
  end
  local n = #queue
  if n == 0 then
    return first
  end
  local item = queue[n]
  queue[n] = nil
  local body = body_head .. '"inputResponses":{"' .. item[1] .. '":' .. ANSWER
    .. '},"requestState":"' .. item[2] .. '",' .. body_tail
  return wrk.format("POST", wrk.path, retry_headers, body)
end

function response(status, headers, body)
  seen = seen + 1
  if mode == "two_rounds" then
    if status ~= 200 then
      bad = bad + 1
    elseif body:find('"input_required"', 1, true) then
      local key = body:match('"inputRequests":%s*{%s*"([^"]+)"')
      local state = body:match('"requestState":%s*"([^"]+)"')
      if key and state then
        asked = asked + 1
        queue[#queue + 1] = {key, state}
      else
        bad = bad + 1
      end
    elseif body:find("Hello, Alice!", 1, true) then
      ok = ok + 1
    else
      bad = bad + 1
    end
  elseif status == 200 then
    ok = ok + 1
  else
    bad = bad + 1
  end
  if stop_after > 0 and seen == stop_after then
    wrk.thread:stop()
    io.write("BENCHSTOP\n") -- wrk itself sleeps out -d: the driver sends SIGINT on this line
    io.flush()
  end
end

function done(summary, latency, requests)
  local ok_total, asked_total, bad_total = 0, 0, 0
  for _, thread in ipairs(threads) do
    ok_total = ok_total + (thread:get("ok") or 0)
    asked_total = asked_total + (thread:get("asked") or 0)
    bad_total = bad_total + (thread:get("bad") or 0)
  end
  local e = summary.errors
  io.write(string.format(
    'BENCHJSON {"requests":%d,"duration_us":%d,"bytes":%d,"connect_errors":%d,'
      .. '"read_errors":%d,"write_errors":%d,"status_errors":%d,"timeouts":%d,'
      .. '"p50_us":%.1f,"p90_us":%.1f,"p99_us":%.1f,"mean_us":%.1f,"max_us":%.1f,'
      .. '"ok":%d,"asked":%d,"bad":%d}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status,
    e.timeout, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.mean, latency.max, ok_total, asked_total, bad_total))
end
