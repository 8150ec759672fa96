-- resil distributed rate limiter, GCRA (generic cell rate algorithm): one
-- permit every `emission` microseconds of Redis server time, with up to
-- `tolerance / emission` permits at once after an idle period. A waiting
-- acquire reserves its permits here (the theoretical arrival time moves on
-- at once), so acquires are granted in the order they asked.
--
-- KEYS[1]  a string: the theoretical arrival time (TAT) of the next permit,
--          microseconds since the epoch, server time.
-- ARGV[1]  emission   microseconds per permit (interval / limit, rounded up)
-- ARGV[2]  tolerance  burst x emission, microseconds (at most 2^51, checked
--                     by the client, so every sum here is an exact double)
-- ARGV[3]  permits    asked for now (0 ..= burst, checked by the client; 0
--                     asks whether one permit is free, and takes none)
-- ARGV[4]  max_wait   microseconds the caller may wait for its grant
--
-- Returns {granted (1|0), permits that could still be granted at once
-- (negative while reservations queue), microseconds until the grant (0: now;
-- a reservation: the caller sleeps that long) or, refused, until the asked
-- permits could be granted, the server time of the grant (or of the refusal)
-- in microseconds}.
local emission = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local permits = tonumber(ARGV[3])
local max_wait = tonumber(ARGV[4])

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

local stored = redis.call('GET', KEYS[1])
local tat = now
if stored then
  tat = math.max(tonumber(stored), now)
end

local allow_at = tat + math.max(permits, 1) * emission - tolerance
if allow_at - now <= max_wait then
  local at = math.max(now, allow_at)
  local new_tat = tat + permits * emission
  if permits > 0 then
    -- Once now passes new_tat the limiter is idle again, which is exactly
    -- what a missing key means: let it expire then.
    redis.call('SET', KEYS[1], string.format('%.0f', new_tat),
      'PX', string.format('%.0f', math.ceil((new_tat - now) / 1000) + 1))
  end
  return { 1, math.floor((now - (new_tat - tolerance)) / emission), at - now, at }
end
return { 0, math.max(0, math.floor((tolerance - (tat - now)) / emission)), allow_at - now, now }
