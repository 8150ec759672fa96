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
-- ARGV[5]  lease      0, or a lease's size: when at least `permits` are free
--                     now, take up to `lease` at once (a local permit lease)
-- ARGV[6]  back_tat   the TAT a previous lease left (0: none)
-- ARGV[7]  back       permits of that lease never handed out, given back
--                     first, but only while the TAT is still back_tat:
--                     once anything was granted after the lease, moving the
--                     TAT back could undo an idle spell's reset and admit
--                     beyond the bound, so those permits expire instead
-- ARGV[8]  ceiling    0, or a request class's ceiling below the burst (its
--                     threshold's share of it): granted only now, and only
--                     if with its permits the TAT runs at most `ceiling`
--                     emissions ahead of now; never reserved, never leased
--
-- Returns {granted (1|0), permits that could still be granted at once
-- (negative while reservations queue), microseconds until the grant (0: now;
-- a reservation: the caller sleeps that long) or, refused, until the asked
-- permits could be granted, the server time of the grant (or of the refusal)
-- in microseconds, permits taken (a lease: up to `lease`), the TAT after
-- them, permits given back}.
local emission = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local permits = tonumber(ARGV[3])
local max_wait = tonumber(ARGV[4])
local lease = tonumber(ARGV[5]) or 0
local back_tat = tonumber(ARGV[6]) or 0
local back = tonumber(ARGV[7]) or 0
local ceiling = tonumber(ARGV[8]) or 0

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

local stored = redis.call('GET', KEYS[1])
local returned = 0
if back > 0 and stored and tonumber(stored) == back_tat then
  returned = back
  local undone = back_tat - back * emission
  if undone > now then
    redis.call('SET', KEYS[1], string.format('%.0f', undone),
      'PX', string.format('%.0f', math.ceil((undone - now) / 1000) + 1))
    stored = string.format('%.0f', undone)
  else
    redis.call('DEL', KEYS[1])
    stored = nil
  end
end
local tat = now
if stored then
  tat = math.max(tonumber(stored), now)
end

if ceiling > 0 then
  -- Permits taken are how far the TAT runs ahead of now; a class below its
  -- threshold is admitted only while that stays within its ceiling.
  local class_at = tat + math.max(permits, 1) * emission - ceiling * emission
  if class_at > now then
    return { 0, math.max(0, math.floor((tolerance - (tat - now)) / emission)), class_at - now,
      now, 0, 0, returned }
  end
  local new_tat = tat + permits * emission
  if permits > 0 then
    redis.call('SET', KEYS[1], string.format('%.0f', new_tat),
      'PX', string.format('%.0f', math.ceil((new_tat - now) / 1000) + 1))
  end
  return { 1, math.floor((now - (new_tat - tolerance)) / emission), 0, now, permits, new_tat,
    returned }
end

local allow_at = tat + math.max(permits, 1) * emission - tolerance
if allow_at - now <= max_wait then
  local at = math.max(now, allow_at)
  local take = permits
  if lease > 0 and at == now then
    -- allow_at <= now: at least max(permits, 1) fit under the tolerance.
    take = math.max(permits, math.min(lease, math.floor((now - tat + tolerance) / emission)))
  end
  local new_tat = tat + take * emission
  if take > 0 then
    -- Once now passes new_tat the limiter is idle again, which is exactly
    -- what a missing key means: let it expire then.
    redis.call('SET', KEYS[1], string.format('%.0f', new_tat),
      'PX', string.format('%.0f', math.ceil((new_tat - now) / 1000) + 1))
  end
  return { 1, math.floor((now - (new_tat - tolerance)) / emission), at - now, at, take, new_tat,
    returned }
end
return { 0, math.max(0, math.floor((tolerance - (tat - now)) / emission)), allow_at - now, now, 0,
  0, returned }
