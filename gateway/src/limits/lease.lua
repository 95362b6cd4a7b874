-- Leases tokens of one key's GCRA bucket for a gateway replica (see shared.rs).
-- KEYS[1]: the bucket, holding the theoretical arrival time in µs.
-- ARGV[1]: emission interval in µs; ARGV[2]: tolerance (burst × interval) in µs;
-- ARGV[3]: tokens wanted; ARGV[4]: the caller's clock in µs, used when this Redis user may not
-- run TIME (Redis's own clock is preferred: one clock for every replica).
-- Returns {granted, remaining after the grant, µs until full}
--      or {0, µs until one token, µs until full}.
local clock = redis.pcall('TIME')
local now
if type(clock) == 'table' and clock[1] then
  now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
else
  now = tonumber(ARGV[4])
end
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local wanted = tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local room = math.floor((tolerance - (tat - now)) / interval)
if room < 1 then
  return {0, tat - now + interval - tolerance, tat - now}
end
local granted = math.min(wanted, room)
local charged = tat + granted * interval
redis.call('SET', KEYS[1], string.format('%d', charged), 'PX', math.ceil((charged - now) / 1000) + 1000)
return {granted, room - granted, charged - now}
