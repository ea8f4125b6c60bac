-- users_by_platform: how many users have a profile on each streaming platform (a user with
-- several counts on each of them, so the bars may add to more than the users; 'unknown' when
-- none is known); horizontal bars. `all_users`: every user once, for the chart to say so.
-- Reads analytics.users, one row per platform.
select listed.platform, count(*) as users,
    (select count(*) from analytics.users) as all_users
from analytics.users as users
cross join
    unnest(string_to_array(coalesce(users.platforms, 'unknown'), ',')) as listed(platform)
group by listed.platform
order by users desc, listed.platform
