-- cosched's job_submit script for slurmctld (JobSubmitPlugins=lua; Slurm reads job_submit.lua
-- beside slurm.conf). Every job of the harvest partition asks for the node feature of the same
-- name: harvest nodes offer it (Features=harvest on their NodeName line), and coschedd takes it
-- from a node whose trainer stays over budget with its co-tenants at the minimum share
-- (guard.harvest_feature), so that no new harvest job starts there until it gives it back.
-- A partition cannot require a feature by itself: hence this script. docs/slurm.md, "Deploying
-- on a cluster".
--
-- Installed as /usr/lib/cosched/slurm/job_submit.lua. A site without a job_submit.lua links it:
--   ln -sf /usr/lib/cosched/slurm/job_submit.lua /etc/slurm/job_submit.lua
-- A harvest partition of another name sets it first (cosched slurm-conf prints the two lines):
--   cosched_harvest_partition = "scavenger"
--   return dofile("/usr/lib/cosched/slurm/job_submit.lua")
-- A site with its own script loads this one first and calls cosched_harvest_job from its
-- slurm_job_submit and slurm_job_modify (this file defines them only where they are not yet):
--   dofile("/usr/lib/cosched/slurm/job_submit.lua")
--   function slurm_job_submit(job_desc, part_list, submit_uid)
--       cosched_harvest_job(job_desc, nil)
--       ... the site's own rules ...
--   end
--   function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
--       cosched_harvest_job(job_desc, job_rec)
--       ...
--   end

cosched_harvest_partition = cosched_harvest_partition or "harvest"
cosched_harvest_feature = cosched_harvest_feature or cosched_harvest_partition

-- Whether a comma-separated list of partitions names the harvest partition.
local function names_harvest(partitions)
    if partitions == nil then
        return false
    end
    for name in string.gmatch(partitions, "[^,]+") do
        if name == cosched_harvest_partition then
            return true
        end
    end
    return false
end

-- A constraint as cosched_harvest_job leaves it: the feature alone, or (the job's own)&feature.
-- Only these forms: in "harvest&a|b" Slurm reads (harvest&a)|b, which a node without the feature
-- satisfies.
local function asks_feature(features)
    local suffix = ")&" .. cosched_harvest_feature
    return features == cosched_harvest_feature
        or (string.sub(features, 1, 1) == "(" and string.sub(features, -string.len(suffix)) == suffix)
end

-- The job's own constraint, without what cosched_harvest_job added to it.
local function without_feature(features)
    local suffix = ")&" .. cosched_harvest_feature
    if features == cosched_harvest_feature then
        return ""
    elseif asks_feature(features) then
        return string.sub(features, 2, -string.len(suffix) - 1)
    end
    return features
end

-- A job of the harvest partition (job_desc's, else the job record's when it is a modification)
-- asks for the feature, whatever else its constraint asks; a job moved out of it gets its own
-- constraint back (one that had none keeps the feature: Slurm's Lua cannot clear a constraint;
-- `scontrol update JobId=J Features=` does). A job submitted to several partitions, harvest among
-- them, asks for it in all of them.
function cosched_harvest_job(job_desc, job_rec)
    local partitions = job_desc.partition
    if partitions == nil and job_rec ~= nil then
        partitions = job_rec.partition
    end
    local features = job_desc.features
    if features == nil and job_rec ~= nil then
        features = job_rec.features
    end
    if not names_harvest(partitions) then
        if job_rec ~= nil and job_desc.partition ~= nil and features ~= nil and asks_feature(features) then
            job_desc.features = without_feature(features)
        end
        return
    end
    if features == nil or features == "" then
        job_desc.features = cosched_harvest_feature
    elseif not asks_feature(features) then
        job_desc.features = "(" .. features .. ")&" .. cosched_harvest_feature
    end
end

if slurm_job_submit == nil then
    function slurm_job_submit(job_desc, part_list, submit_uid)
        cosched_harvest_job(job_desc, nil)
        return slurm.SUCCESS
    end
end

if slurm_job_modify == nil then
    -- a user who updates the job's Features or Partition cannot drop the feature
    function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
        if job_desc.features ~= nil or job_desc.partition ~= nil then
            cosched_harvest_job(job_desc, job_rec)
        end
        return slurm.SUCCESS
    end
end

return slurm.SUCCESS
