-- resil distributed rate limiter, GCRA (generic cell rate algorithm): one
-- permit every `emission` microseconds of Redis server time, with up to
-- `tolerance / emission` permits at once after an idle period.
--
-- KEYS[1]  a string: the theoretical arrival time (TAT) of the next permit,
--          microseconds since the epoch, server time.
-- ARGV[1]  emission   microseconds per permit (interval / limit, rounded up)
-- ARGV[2]  tolerance  burst x emission, microseconds
-- ARGV[3]  permits    asked for now (1 ..= burst, checked by the client)
--
-- Returns {granted (1|0), permits that could still be granted at once,
-- microseconds until the asked permits could be granted (0 if granted), the
-- server time of the decision in microseconds}.
local emission = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local permits = tonumber(ARGV[3])

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

local stored = redis.call('GET', KEYS[1])
local tat = now
if stored then
  tat = math.max(tonumber(stored), now)
end

local new_tat = tat + permits * emission
local allow_at = new_tat - tolerance
if allow_at <= now then
  -- Once now passes new_tat the limiter is idle again, which is exactly what
  -- a missing key means: let it expire then.
  redis.call('SET', KEYS[1], string.format('%.0f', new_tat),
    'PX', math.ceil((new_tat - now) / 1000) + 1)
  return { 1, math.floor((now - allow_at) / emission), 0, now }
end
return { 0, math.max(0, math.floor((tolerance - (tat - now)) / emission)), allow_at - now, now }
