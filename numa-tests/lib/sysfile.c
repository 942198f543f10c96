// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sysfile.h"

int nt_file_read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	int err = 0;

	if (!f)
		return -errno;
	if (!fgets(buf, len, f))
		err = ferror(f) ? -EIO : -ENODATA;
	fclose(f);
	if (!err)
		buf[strcspn(buf, "\n")] = '\0';
	return err;
}

int nt_file_read_choice(const char *path, char *buf, size_t len)
{
	char line[256], *open, *close;
	int err = nt_file_read_line(path, line, sizeof(line));

	if (err)
		return err;
	open = strchr(line, '[');
	close = open ? strchr(open, ']') : NULL;
	if (!close)
		return -EINVAL;
	snprintf(buf, len, "%.*s", (int)(close - open - 1), open + 1);
	return 0;
}

int nt_file_write(const char *path, const char *text)
{
	size_t len = strlen(text);
	int fd, err = 0;
	ssize_t n;

	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	n = write(fd, text, len);
	if (n < 0)
		err = -errno;
	else if ((size_t)n != len)
		err = -EIO;
	if (close(fd) && !err)
		err = -errno;
	return err;
}
