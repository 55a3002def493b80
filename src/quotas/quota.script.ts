import { SERVER_RUN_LUA } from '../redis/server-run';

/**
 * Every counter script begins with ARGV[1], the server run (run_id) its keys are named for (QuotaStore). On
 * another run (the server restarted, perhaps from an older snapshot, or a replica took its place) it changes
 * nothing and returns {-2, the run}: the store names the keys for that run and calls again.
 */
const SAME_RUN_LUA = `
local run = ${SERVER_RUN_LUA}
if run ~= ARGV[1] then return {-2, run} end
`;

/**
 * Check-and-add of every counter an acceptance moves, atomically: either all of them take their cost or none
 * does, so concurrent acceptances neither lose an update nor pass a limit together. The reservations of
 * concurrent acceptances (of any accounts) share one call, each decided in turn as if it came alone.
 *
 * ARGV[2]: the number of reservations. Then per reservation: its counter count n, and per counter four values:
 * limit, cost, init, ttlMs. KEYS: the counters of every reservation, in the same order.
 * A counter that does not exist is set to `init` (expiring after ttlMs) when init >= 0: the usage a load read
 * from PostgreSQL. With init -1 a missing counter is reported instead and nothing of that reservation moves.
 * Returns, per reservation: its status, then the value of each of its counters. Status 1 = added (values
 * after), 0 = refused (values as they are), -1 = some counter is missing (value -1): load it.
 */
export const QUOTA_RESERVE_LUA = `${SAME_RUN_LUA}
local reservations = tonumber(ARGV[2])
local a = 3
local k = 0
local out = {}
for _ = 1, reservations do
  local n = tonumber(ARGV[a])
  a = a + 1
  local values = {}
  local missing = false
  for i = 1, n do
    local base = a + (i - 1) * 4
    local v = redis.call('GET', KEYS[k + i])
    if not v then
      local init = tonumber(ARGV[base + 2])
      if init >= 0 then
        redis.call('SET', KEYS[k + i], init, 'PX', ARGV[base + 3])
        v = init
      end
    end
    if v then values[i] = tonumber(v) else values[i] = -1; missing = true end
  end
  local status = 1
  if missing then
    status = -1
  else
    for i = 1, n do
      local base = a + (i - 1) * 4
      if values[i] + tonumber(ARGV[base + 1]) > tonumber(ARGV[base]) then status = 0 end
    end
    if status == 1 then
      for i = 1, n do
        values[i] = redis.call('INCRBY', KEYS[k + i], ARGV[a + (i - 1) * 4 + 1])
      end
    end
  end
  out[#out + 1] = status
  for i = 1, n do out[#out + 1] = values[i] end
  a = a + n * 4
  k = k + n
end
return out
`;

/**
 * Adds ARGV[i + 1] (negative: gives back) to counter KEYS[i] only if it exists: a missing counter is loaded from
 * PostgreSQL, which already holds (or never will) what is added here. Never below zero; the expiry is kept.
 */
export const QUOTA_ADJUST_LUA = `${SAME_RUN_LUA}
for i = 1, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    local v = redis.call('INCRBY', KEYS[i], ARGV[i + 1])
    if v < 0 then redis.call('SET', KEYS[i], 0, 'KEEPTTL') end
  end
end
return 1
`;

/** Deletes the counters KEYS (they load again from PostgreSQL). */
export const QUOTA_DROP_LUA = `${SAME_RUN_LUA}
for i = 1, #KEYS do redis.call('UNLINK', KEYS[i]) end
return 1
`;
