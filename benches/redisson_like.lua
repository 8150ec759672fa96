-- A Redisson-style RRateLimiter script (OVERALL mode), written from the
-- published description of its algorithm, for side-by-side measurement only:
-- a "permits left" string, and a sorted set with one member per grant whose
-- score is the CLIENT's clock in milliseconds and whose member packs the
-- permits with a random value (so two grants of the same millisecond do not
-- overwrite each other). Expired members are summed back into "permits left"
-- on the next acquire. The rate configuration is passed in, not kept in a
-- hash, so both scripts do the same per-call work apart from the algorithm.
--
-- KEYS[1] permits left (string)    KEYS[2] grants (sorted set)
-- ARGV[1] rate  ARGV[2] interval (ms)  ARGV[3] client now (ms)
-- ARGV[4] permits  ARGV[5] random member suffix
-- Returns {granted (1|0), ms until the oldest grant expires (0 if granted)}.
local rate = tonumber(ARGV[1])
local interval = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local permits = tonumber(ARGV[4])

local value = redis.call('GET', KEYS[1])
if value == false then
  value = rate
  redis.call('SET', KEYS[1], rate)
else
  value = tonumber(value)
  local expired = redis.call('ZRANGEBYSCORE', KEYS[2], 0, now - interval)
  local released = 0
  for _, member in ipairs(expired) do
    released = released + tonumber(string.match(member, '^(%d+):'))
  end
  if released > 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[2], 0, now - interval)
    value = value + released
    if value > rate then value = rate end
    redis.call('SET', KEYS[1], value)
  end
end

if value < permits then
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  local wait = interval
  if oldest[2] then wait = tonumber(oldest[2]) + interval - now end
  return { 0, wait }
end
redis.call('ZADD', KEYS[2], now, permits .. ':' .. ARGV[5])
redis.call('DECRBY', KEYS[1], permits)
return { 1, 0 }
