-- resil distributed rate limiter, sliding buckets: at most `limit` permits in
-- any window of `interval` microseconds of Redis server time.
--
-- KEYS[1]  a hash: field = the end of a time bucket (microseconds since the
--          epoch, server time), value = permits granted in that bucket.
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

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local horizon = now - interval

local fields = redis.call('HGETALL', KEYS[1])
local used = 0
local stale = nil
local newest = 0
for i = 1, #fields, 2 do
  local e = tonumber(fields[i])
  if e > horizon then
    used = used + tonumber(fields[i + 1])
    if e > newest then newest = e end
  else
    stale = stale or {}
    stale[#stale + 1] = fields[i]
  end
end
if stale then
  redis.call('HDEL', KEYS[1], unpack(stale))
end

if used + permits <= limit then
  local e = (math.floor(now / width) + 1) * width
  if redis.call('HINCRBY', KEYS[1], string.format('%.0f', e), permits) == permits then
    -- A new bucket: the newest bucket counts until its end + interval, and
    -- after that the key holds nothing that counts, so it may go then (whole
    -- milliseconds, rounded up; the newest is normally this one, unless the
    -- server's clock stepped back). A grant into an existing bucket needs no
    -- new TTL: the one set when that bucket was created ends at the same time.
    if e > newest then newest = e end
    redis.call('PEXPIRE', KEYS[1], math.ceil((newest + interval - now) / 1000) + 1)
  end
  return { 1, limit - used - permits, 0, now }
end

-- Refused: the wait ends when the oldest buckets holding the excess leave.
local live = {}
for i = 1, #fields, 2 do
  local e = tonumber(fields[i])
  if e > horizon then
    live[#live + 1] = { e, tonumber(fields[i + 1]) }
  end
end
table.sort(live, function(a, b) return a[1] < b[1] end)
local excess = used + permits - limit
local wait = interval + width
for _, bucket in ipairs(live) do
  excess = excess - bucket[2]
  if excess <= 0 then
    wait = bucket[1] + interval - now
    break
  end
end
return { 0, limit - used, wait, now }
