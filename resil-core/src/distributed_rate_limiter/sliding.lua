-- resil distributed rate limiter, sliding buckets: at most `limit` permits in
-- any window of `interval` microseconds of Redis server time, granted in the
-- order asked (a waiting acquire reserves its permit here, and nobody asking
-- later is granted before it).
--
-- KEYS[1]  a hash: field = the end of a time bucket (microseconds since the
--          epoch, server time), value = permits granted in that bucket; plus
--          `n`, the sum of those counts, `o`, the oldest bucket's end, so
--          that a grant reads a few fields, not every bucket, and `l`, the
--          time of the latest reservation (a grant in the future).
-- ARGV[1]  limit      permits per interval
-- ARGV[2]  interval   microseconds
-- ARGV[3]  width      bucket width, microseconds
-- ARGV[4]  permits    asked for now (0 ..= limit, checked by the client; 0
--                     asks whether one permit is free, and takes none)
-- ARGV[5]  max_wait   microseconds the caller may wait for its grant
-- ARGV[6]  lease      0, or a lease's size: when at least `permits` (and no
--                     reservation) are free now, take up to `lease` at once
--                     (a local permit lease; the client hands them out)
-- ARGV[7]  back_end   the bucket end a previous lease was counted in (0: none)
-- ARGV[8]  back       permits of that lease never handed out, given back first
--                     (taken off that bucket while it still exists)
-- ARGV[9]  ceiling    0, or a request class's ceiling below the limit (its
--                     threshold's share of it): granted only now, only while
--                     the window holds at most `ceiling` with its permits and
--                     nobody reserved ahead; never reserved, never leased
--
-- A grant at time g lands in the bucket [s, e) holding g and counts while
-- e > t - interval for any later grant at t, so every earlier grant that
-- could share a window of `interval` with a new one is counted: the limit is
-- exact for any window, and a permit comes back between `interval` and
-- `interval + width` after it was taken. Grant times never decrease (a new
-- grant is at or after the latest reservation), so a grant only ever needs
-- to look back.
--
-- A permit given back leaves the count of the bucket it was taken in: every
-- decision made while it counted was only stricter, and what is left counted
-- is still at most `limit` in any window.
--
-- Returns {granted (1|0), permits left (after this grant, or before the
-- refused one; negative while reservations queue), microseconds until the
-- grant (0: now; a reservation: the caller sleeps that long) or, refused, until
-- enough permits would come back, the server time of the grant (or of the
-- refusal) in microseconds, permits taken (a lease: up to `lease`), the end of
-- the bucket they count in (0: none), permits given back}.
local limit = tonumber(ARGV[1])
local interval = tonumber(ARGV[2])
local width = tonumber(ARGV[3])
local permits = tonumber(ARGV[4])
local max_wait = tonumber(ARGV[5])
local lease = tonumber(ARGV[6]) or 0
local back_end = tonumber(ARGV[7]) or 0
local back = tonumber(ARGV[8]) or 0
local ceiling = tonumber(ARGV[9]) or 0
local key = KEYS[1]

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local horizon = now - interval

local returned = 0
if back > 0 and back_end > 0 then
  -- The field, if still there, is part of `n` (a recount drops both).
  local field = string.format('%.0f', back_end)
  local count = tonumber(redis.call('HGET', key, field))
  if count and count > 0 then
    returned = math.min(count, back)
    redis.call('HINCRBY', key, field, -returned)
    redis.call('HINCRBY', key, 'n', -returned)
  end
end

-- The live buckets, {end, count}, oldest first, after dropping those that no
-- longer count.
local function buckets()
  local fields = redis.call('HGETALL', key)
  local live, stale = {}, {}
  for i = 1, #fields, 2 do
    local f = fields[i]
    if f ~= 'n' and f ~= 'o' and f ~= 'l' then
      local e = tonumber(f)
      if e > horizon then
        live[#live + 1] = { e, tonumber(fields[i + 1]) }
      else
        stale[#stale + 1] = f
      end
    end
  end
  if #stale > 0 then
    redis.call('HDEL', key, unpack(stale))
  end
  table.sort(live, function(a, b) return a[1] < b[1] end)
  return live
end

local state = redis.call('HMGET', key, 'n', 'o', 'l')
local used = tonumber(state[1]) or 0
local oldest = tonumber(state[2])
local latest = tonumber(state[3]) or 0
if oldest and oldest <= horizon then
  -- The oldest bucket left the window (about once per bucket width).
  used, oldest = 0, nil
  local live = buckets()
  for _, b in ipairs(live) do
    used = used + b[2]
  end
  if #live > 0 then
    oldest = live[1][1]
    redis.call('HSET', key, 'n', used, 'o', string.format('%.0f', oldest))
  else
    redis.call('HDEL', key, 'n', 'o')
  end
end

local need = math.max(permits, 1)
if ceiling > 0 and (latest > now or used + need > ceiling) then
  -- A class below its threshold: refused now (its room comes back within a
  -- period at most).
  return { 0, limit - used, interval, now, 0, 0, returned }
end
-- Nobody is granted before an earlier reservation.
local from = math.max(now, latest)
local at = from
if from > now or used + need > limit then
  -- The earliest time from `from` on at which the grants still counting
  -- leave room: when the oldest buckets holding the excess leave the window.
  local excess = used + need - limit
  if excess > 0 then
    at = nil
    for _, b in ipairs(buckets()) do
      excess = excess - b[2]
      if excess <= 0 then
        at = math.max(from, b[1] + interval)
        break
      end
    end
    if not at then
      -- More than the limit (lowered since?) counts ahead of this acquire.
      return { 0, limit - used, interval + width, now, 0, 0, returned }
    end
  end
  if at - now > max_wait then
    return { 0, limit - used, at - now, now, 0, 0, returned }
  end
end

local take = permits
if lease > 0 and at == now then
  -- Free now, and nobody reserved ahead (at == now means latest <= now and
  -- used + need <= limit): a lease takes what the window has left, up to
  -- its size.
  take = math.max(permits, math.min(lease, limit - used))
end
local e = 0
if take > 0 then
  e = (math.floor(at / width) + 1) * width
  local field = string.format('%.0f', e)
  local count = redis.call('HINCRBY', key, field, take)
  redis.call('HINCRBY', key, 'n', take)
  if count == take then
    -- A new bucket. It counts until e + interval; after that the key holds
    -- nothing that counts, so it may go then (whole milliseconds, rounded
    -- up; extended only, in case the server's clock stepped back). Grants
    -- into an existing bucket need no new TTL.
    if not oldest or e < oldest then
      redis.call('HSET', key, 'o', field)
    end
    local ttl = math.ceil((e + interval - now) / 1000) + 1
    if redis.call('PTTL', key) < ttl then
      redis.call('PEXPIRE', key, string.format('%.0f', ttl))
    end
  end
end
if at > now then
  redis.call('HSET', key, 'l', string.format('%.0f', at))
end
return { 1, limit - used - take, at - now, at, take, e, returned }
