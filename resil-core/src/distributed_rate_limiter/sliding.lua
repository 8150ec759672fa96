-- resil distributed rate limiter, sliding buckets: at most `limit` permits in
-- any window of `interval` microseconds of Redis server time.
--
-- KEYS[1]  a hash: field = the end of a time bucket (microseconds since the
--          epoch, server time), value = permits granted in that bucket; plus
--          `n`, the sum of those counts, and `o`, the oldest bucket's end, so
--          that a grant reads two fields, not every bucket.
-- ARGV[1]  limit      permits per interval
-- ARGV[2]  interval   microseconds
-- ARGV[3]  width      bucket width, microseconds
-- ARGV[4]  permits    asked for now (1 ..= limit, checked by the client)
--
-- A grant made at time g lands in the bucket [s, e) holding g and counts
-- while e > now - interval, so every earlier grant that could share a window
-- of `interval` with a new one is counted: the limit is exact for any window,
-- and a permit comes back between `interval` and `interval + width` after it
-- was taken. The rule reads only the field itself, so a change of the limit,
-- the interval or the width keeps the counts meaningful.
--
-- Returns {granted (1|0), permits left (after this grant, or before the
-- refused one), microseconds until enough permits come back (0 if granted),
-- the server time of the decision in microseconds}.
local limit = tonumber(ARGV[1])
local interval = tonumber(ARGV[2])
local width = tonumber(ARGV[3])
local permits = tonumber(ARGV[4])
local key = KEYS[1]

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local horizon = now - interval

-- The live buckets, {end, count}, after dropping those that no longer count.
local function buckets()
  local fields = redis.call('HGETALL', key)
  local live, stale = {}, {}
  for i = 1, #fields, 2 do
    local f = fields[i]
    if f ~= 'n' and f ~= 'o' then
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
  return live
end

local state = redis.call('HMGET', key, 'n', 'o')
local used = tonumber(state[1]) or 0
local oldest = tonumber(state[2])
if oldest and oldest <= horizon then
  -- The oldest bucket left the window (about once per bucket width).
  used, oldest = 0, nil
  for _, b in ipairs(buckets()) do
    used = used + b[2]
    if not oldest or b[1] < oldest then oldest = b[1] end
  end
  if oldest then
    redis.call('HSET', key, 'n', used, 'o', string.format('%.0f', oldest))
  else
    redis.call('HDEL', key, 'n', 'o')
  end
end

if used + permits <= limit then
  local e = (math.floor(now / width) + 1) * width
  local field = string.format('%.0f', e)
  local count = redis.call('HINCRBY', key, field, permits)
  redis.call('HINCRBY', key, 'n', permits)
  if count == permits then
    -- A new bucket. It counts until e + interval; after that the key holds
    -- nothing that counts, so it may go then (whole milliseconds, rounded
    -- up; extended only, in case the server's clock stepped back). Grants
    -- into an existing bucket need no new TTL.
    if not oldest or e < oldest then
      redis.call('HSET', key, 'o', field)
    end
    local ttl = math.ceil((e + interval - now) / 1000) + 1
    if redis.call('PTTL', key) < ttl then
      redis.call('PEXPIRE', key, ttl)
    end
  end
  return { 1, limit - used - permits, 0, now }
end

-- Refused: the wait ends when the oldest buckets holding the excess leave.
local live = buckets()
table.sort(live, function(a, b) return a[1] < b[1] end)
local excess = used + permits - limit
local wait = interval + width
for _, b in ipairs(live) do
  excess = excess - b[2]
  if excess <= 0 then
    wait = b[1] + interval - now
    break
  end
end
return { 0, limit - used, wait, now }
